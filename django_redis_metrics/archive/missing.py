"""The database error of an archive read or pass on a database without the archive's tables (a
site upgraded without ``migrate``): the same error, of the same class (code catching
``DatabaseError`` still catches it), its message saying which database lacks them and what to
run. Other database errors pass through untouched.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.db import DatabaseError

#: What the archive's table names begin with (``ArchivedSlice``, ``ArchivedPeriod``,
#: ``ArchivedBreakdown``, ``ArchiveCursor``: Django's default ``app_model`` names).
TABLES = "django_redis_metrics_archive"
#: How SQLite, PostgreSQL and MySQL say a table is missing.
MISSING = ("no such table", "does not exist", "doesn't exist")


def is_missing(error: BaseException) -> bool:
    """Whether ``error`` says one of the archive's tables does not exist."""
    text = str(error).lower()
    return TABLES in text and any(words in text for words in MISSING)


def hint(using: str) -> str:
    return (
        f"The archive's tables are not on database {using!r}: run `python manage.py migrate "
        f"django_redis_metrics --database {using}` (docs/history.md)."
    )


@contextmanager
def archive_tables(using: str) -> Iterator[None]:
    """Reads of the archive on ``using``: a missing table's error says to migrate."""
    try:
        yield
    except DatabaseError as error:
        if not is_missing(error):
            raise
        raise type(error)(f"{error}. {hint(using)}") from error
