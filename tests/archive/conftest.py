"""The archive's tests: ``archive_db`` and ``ARCHIVE_DATABASES`` come from
``tests/archive_databases.py`` (a plugin of the suite, so other folders use them too)."""

from __future__ import annotations

from ..archive_databases import ARCHIVE_DATABASES

__all__ = ["ARCHIVE_DATABASES"]
