"""The documentation stays in step with the code: settings, system check ids, README."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

from django_redis_metrics.conf import DEFAULTS

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "django_redis_metrics"
DOCS = ROOT / "docs"

DEMO_COMMAND = (
    'python3 -m venv .venv && .venv/bin/pip install -e ".[demo]" '
    "&& .venv/bin/python example_project/manage.py demo"
)
TEST_COMMAND = (
    'python3 -m venv .venv && .venv/bin/pip install -e ".[test]" && .venv/bin/python -m pytest'
)


def settings_table_keys() -> set[str]:
    """The first column of the table rows of settings.md that name a key: | `KEY` | ... |."""
    text = (DOCS / "settings.md").read_text("utf-8")
    return set(re.findall(r"^\| `([A-Z][A-Z0-9_]*)` \|", text, flags=re.MULTILINE))


def check_ids_in_source() -> set[str]:
    """Check ids the package can raise: written whole, or as the "E001" that checks.py puts
    into ``ID = "django_redis_metrics.{}"``."""
    ids = set()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text("utf-8")
        ids.update(re.findall(r"django_redis_metrics\.([EW]\d{3})\b", text))
        ids.update(re.findall(r"""["']([EW]\d{3})["']""", text))
    return {f"django_redis_metrics.{code}" for code in ids}


def test_settings_page_documents_exactly_the_known_keys() -> None:
    documented = settings_table_keys()
    assert set(DEFAULTS) - documented == set(), "undocumented settings"
    assert documented - set(DEFAULTS) == set(), "documented settings the app does not know"


def settings_docs_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "settings_docs", ROOT / "scripts/settings_docs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_settings_tables_are_written_from_the_settings_table() -> None:
    """The tables of settings.md are what scripts/settings_docs.py writes from conf.py: run it
    after changing a setting."""
    script = settings_docs_script()
    page = (DOCS / "settings.md").read_text("utf-8")
    assert script.render(page) == page, "run scripts/settings_docs.py"
    assert "at `STATISTIC_PRECISIONS`" in script.settings_table()  # VIEW_TIMER's line
    edited = page.replace('| `PREFIX` | `"metrics"` |', '| `PREFIX` | `"stats"` |')
    assert edited != page and script.render(edited) == page


def test_every_check_id_is_documented() -> None:
    checks_page = (DOCS / "checks.md").read_text("utf-8")
    found = check_ids_in_source()
    assert "django_redis_metrics.E001" in found  # the search itself works
    assert {check_id for check_id in found if f"`{check_id}`" not in checks_page} == set()


def test_readme_is_short_and_keeps_the_ci_commands() -> None:
    readme = (ROOT / "README.md").read_text("utf-8")
    assert len(readme.splitlines()) <= 200
    assert DEMO_COMMAND in readme
    assert TEST_COMMAND in readme
    assert "seed" not in readme.lower()


def test_the_docs_site_loads_no_fonts_from_another_host() -> None:
    # MkDocs Material fetches Google Fonts unless the theme's font is false.
    config = (ROOT / "mkdocs.yml").read_text("utf-8")
    assert re.search(r"^theme:\n(?:  .*\n)*  font: false$", config, flags=re.MULTILINE)
