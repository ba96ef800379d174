"""Write the tables of docs/settings.md from the settings table in django_redis_metrics/conf.py.

Only the blocks between the markers are written; the rest of the page is prose kept by hand.
``tests/test_docs.py`` fails when the page's blocks differ from what this script writes.

    .venv/bin/python scripts/settings_docs.py           # rewrite docs/settings.md
    .venv/bin/python scripts/settings_docs.py --check   # exit 1 if it is out of date
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from django_redis_metrics.conf import Settings  # noqa: E402
from django_redis_metrics.sender_settings import SENDER_KEYS  # noqa: E402
from django_redis_metrics.setting import python_literal  # noqa: E402

PAGE = ROOT / "docs" / "settings.md"
BEGIN = "<!-- {name}: written by scripts/settings_docs.py from conf.py; edit it there -->"
END = "<!-- end of {name} -->"


def settings_table() -> str:
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for setting in Settings.table():
        rows.append(f"| `{setting.name}` | {setting.default_text()} | {setting.doc} |")
    return "\n".join(rows)


def sender_table() -> str:
    rows = [
        "| key of `SENDER` | default | meaning | replaces the flat key |",
        "|---|---|---|---|",
    ]
    for key in SENDER_KEYS:
        shown = key.shown or f"`{python_literal(key.default)}`"
        legacy = f"`{key.legacy}`" if key.legacy else "(new)"
        rows.append(f'| `"{key.name}"` | {shown} | {key.doc} | {legacy} |')
    return "\n".join(rows)


BLOCKS = {"settings table": settings_table, "sender table": sender_table}


def render(page: str) -> str:
    """``page`` with each marked block written anew."""
    for name, make in BLOCKS.items():
        begin, end = BEGIN.format(name=name), END.format(name=name)
        pattern = re.compile(re.escape(begin) + r"\n.*?\n" + re.escape(end), flags=re.DOTALL)
        if not pattern.search(page):
            raise SystemExit(f"{PAGE} has no block {begin!r} ... {end!r}")
        block = f"{begin}\n{make()}\n{end}"
        page = pattern.sub(lambda _, block=block: block, page, count=1)
    return page


def main() -> None:
    page = PAGE.read_text("utf-8")
    written = render(page)
    if "--check" in sys.argv[1:]:
        sys.exit(0 if written == page else 1)
    PAGE.write_text(written, "utf-8")


if __name__ == "__main__":
    main()
