"""A site upgraded without ``migrate``: every archive read and pass fails with the database's
own error (code catching ``DatabaseError`` still catches it), its message saying which database
lacks the archive's tables and the command that creates them; other errors pass untouched."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import DatabaseError, connections, transaction

from django_redis_metrics import Counter, EventSeries, UniqueBitmap
from django_redis_metrics.archive.missing import archive_tables
from django_redis_metrics.archive.passes import archive_all
from django_redis_metrics.models import (
    ArchiveCursor,
    ArchivedBreakdown,
    ArchivedPeriod,
    ArchivedSlice,
)

from .conftest import ARCHIVE_DATABASES

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES)
DAY = 86400


@pytest.fixture
def unmigrated(backend: Any, metrics_settings: Callable[..., None], archive_db: str) -> str:
    """``ARCHIVE_DATABASE`` without the archive's tables, dropped inside the test's transaction
    (both databases roll the drop back with it)."""
    metrics_settings(ARCHIVE_DATABASE=archive_db)
    with connections[archive_db].cursor() as cursor:
        for model in (ArchivedSlice, ArchivedPeriod, ArchivedBreakdown, ArchiveCursor):
            cursor.execute(f'DROP TABLE "{model._meta.db_table}"')
    return archive_db


def fails_saying_migrate(using: str, read: Callable[[], object]) -> None:
    with pytest.raises(DatabaseError) as raised, transaction.atomic(using=using):
        read()
    assert f"`python manage.py migrate django_redis_metrics --database {using}`" in str(
        raised.value
    )


def test_every_read_and_pass_says_to_migrate(unmigrated: str) -> None:
    now = time.time()
    counter = Counter("signups")
    counter.incr(1)
    bitmap = UniqueBitmap("visitors")
    bitmap.mark(1)
    assert bitmap.count("day") == 1  # what Redis answers alone needs no table
    orders = EventSeries("orders", index=("plan",))
    orders.record(plan="pro")
    for read in (
        lambda: counter.history(DAY, now - 400 * DAY, now),
        lambda: bitmap.count("month", now - 6 * 365 * DAY),
        lambda: bitmap.history("month", now - 6 * 365 * DAY, now),
        lambda: orders.history(now - 60 * DAY, now),
        lambda: orders.count_by("plan", now - 60 * DAY, now),
        lambda: archive_all(),
    ):
        fails_saying_migrate(unmigrated, read)
    with pytest.raises(CommandError, match="migrate django_redis_metrics --database"):
        call_command("archive_metrics", "--dry-run", stdout=io.StringIO())


def test_other_database_errors_pass_untouched() -> None:
    with pytest.raises(DatabaseError) as raised, archive_tables("default"):
        raise DatabaseError("deadlock detected")
    assert str(raised.value) == "deadlock detected" and raised.value.__cause__ is None
