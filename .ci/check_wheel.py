"""Check that an installed wheel carries everything the source tree ships.

Run it with the interpreter of a clean venv that has only the built wheel installed, from a
directory outside the source tree, in isolated mode so that neither the current directory nor
this script's folder is on sys.path:

    cd "$(mktemp -d)" && /path/to/venv/bin/python -I /repo/.ci/check_wheel.py /repo

It fails (exit 1, listing every problem) unless:
- the package is imported from the venv, not from the source tree;
- the installed package holds exactly the source package's shipped files (every .py, every
  .lua at any depth, py.typed, everything under templates/ and static/), compared as sets of
  paths relative to the package and then byte for byte, so a file missing from the wheel, a
  stale file that only the wheel has and a stale copy of a file all show up;
- the distribution ships its license file;
- the public names import, and Django loads the app with its templates, static files and
  migrations found where Django looks for them.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

DIST = "django-redis-realtime-metrics"
PACKAGE = "django_redis_metrics"
PUBLIC = ["Counter", "EventSeries", "UniqueBitmap", "Batch", "get_redis_connection"]
DATA_DIRS = ("templates", "static")  # shipped whole, under the package root


def shipped(path: Path, package_dir: Path) -> bool:
    relative = path.relative_to(package_dir)
    if "__pycache__" in relative.parts or path.suffix in {".pyc", ".pyo"}:
        return False
    return (
        path.suffix in {".py", ".lua"}
        or relative.as_posix() == "py.typed"
        or relative.parts[0] in DATA_DIRS
    )


def files_under(package_dir: Path) -> set[str]:
    return {
        path.relative_to(package_dir).as_posix()
        for path in package_dir.rglob("*")
        if path.is_file() and shipped(path, package_dir)
    }


def main(source_root: Path) -> list[str]:
    problems: list[str] = []
    source_dir = (source_root / PACKAGE).resolve()
    if not source_dir.is_dir():
        return [f"no source package at {source_dir}"]

    import django_redis_metrics as package

    installed_dir = Path(package.__file__).resolve().parent
    if installed_dir == source_dir or source_root.resolve() in installed_dir.parents:
        return [f"{PACKAGE} was imported from the source tree ({installed_dir}), not the wheel"]
    print(f"{PACKAGE} imported from {installed_dir}")

    # What the wheel installed, per its RECORD, and that those files are really there.
    dist = importlib.metadata.distribution(DIST)
    recorded = {
        str(f)[len(PACKAGE) + 1 :]
        for f in dist.files or []
        if str(f).startswith(PACKAGE + "/") and shipped(Path(str(f)), Path(PACKAGE))
    }
    on_disk = files_under(installed_dir)
    if recorded != on_disk:
        problems.append(f"RECORD and disk disagree: {sorted(recorded ^ on_disk)}")

    expected = files_under(source_dir)
    missing = sorted(expected - on_disk)
    extra = sorted(on_disk - expected)
    if missing:
        problems.append(f"missing from the wheel: {missing}")
    if extra:
        problems.append(f"in the wheel but not in the source tree (stale build?): {extra}")
    changed = sorted(
        path
        for path in expected & on_disk
        if (source_dir / path).read_bytes() != (installed_dir / path).read_bytes()
    )
    if changed:
        problems.append(f"differ between the wheel and the source tree (stale build?): {changed}")

    kinds = {
        "lua": lambda path: path.endswith(".lua"),
        "templates": lambda path: path.startswith("templates/"),
        "static": lambda path: path.startswith("static/"),
        "migrations": lambda path: path.startswith("migrations/0"),
    }
    for name, of_kind in kinds.items():
        found = {path for path in on_disk if of_kind(path)}
        in_source = {path for path in expected if of_kind(path)}
        print(f"  {name}: {len(found)} files installed, {len(in_source)} in the source tree")
        if not found:
            problems.append(f"the wheel has no {name} files")
    if "py.typed" not in on_disk:
        problems.append("the wheel has no py.typed")
    print(f"  every shipped file: {len(on_disk)} installed, {len(expected)} in the source tree")

    licenses = [str(f) for f in dist.files or [] if "/licenses/" in str(f)]
    if not licenses:
        problems.append("the wheel ships no license file (LICENSE missing from the source tree?)")
    else:
        print(f"  license files: {licenses}")

    for name in PUBLIC:
        if not hasattr(package, name):
            problems.append(f"{PACKAGE}.{name} is missing")

    problems.extend(check_django())
    return problems


def check_django() -> list[str]:
    """Load the app the way a site does: templates, static files and migrations must be found
    through Django's own machinery, i.e. inside the installed package."""
    import django
    from django.conf import settings

    settings.configure(
        INSTALLED_APPS=[
            "django.contrib.admin",
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "django.contrib.sessions",
            "django.contrib.messages",
            "django.contrib.staticfiles",
            PACKAGE,
        ],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        TEMPLATES=[
            {"BACKEND": "django.template.backends.django.DjangoTemplates", "APP_DIRS": True}
        ],
        STATIC_URL="/static/",
        USE_TZ=True,
    )
    django.setup()

    from django.apps import apps
    from django.contrib.staticfiles import finders
    from django.db.migrations.loader import MigrationLoader
    from django.template.loader import get_template

    problems: list[str] = []
    app = apps.get_app_config(PACKAGE.rsplit(".", 1)[-1])
    app_dir = Path(app.path)
    for template in sorted((app_dir / "templates").rglob("*.html")):
        name = template.relative_to(app_dir / "templates").as_posix()
        try:
            get_template(name)
        except Exception as exc:
            problems.append(f"template {name} does not load: {exc!r}")
    for static in sorted((app_dir / "static").rglob("*")):
        if static.is_file():
            name = static.relative_to(app_dir / "static").as_posix()
            if not finders.find(name):
                problems.append(f"static file {name} is not found by staticfiles")
    loader = MigrationLoader(None, ignore_no_migrations=True)
    migrations = sorted(name for label, name in loader.disk_migrations if label == app.label)
    if not migrations:
        problems.append(f"Django finds no migrations for {app.label}")
    print(f"  Django: app {app.label!r} loaded, migrations {migrations}")
    return problems


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(f"usage: python -I {sys.argv[0]} SOURCE_ROOT")
    found = main(Path(sys.argv[1]))
    for problem in found:
        print(f"FAIL: {problem}")
    if found:
        sys.exit(1)
    print("wheel OK")
