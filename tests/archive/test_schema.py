"""The archive's tables exist on both databases and upsert as the archive relies on."""

from __future__ import annotations

import pytest

from django_redis_metrics.archive.base import advance_cursor, cursor
from django_redis_metrics.models import ArchivedSlice

from .conftest import ARCHIVE_DATABASES

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES)


def test_an_upsert_sets_a_slice_and_never_adds(archive_db: str) -> None:
    """Writing the same slice twice keeps one row holding the last values: what makes a pass
    idempotent (run twice, or on two hosts at once, nothing is counted twice)."""
    rows = ArchivedSlice.objects.using(archive_db)

    def upsert(count: int) -> None:
        rows.bulk_create(
            [
                ArchivedSlice(
                    kind="counter",
                    series="hits",
                    metric="hits",
                    precision=3600,
                    start=7200,
                    count=count,
                )
            ],
            update_conflicts=True,
            unique_fields=["kind", "series", "precision", "start"],
            update_fields=["count"],
        )

    upsert(5)
    upsert(7)
    assert list(rows.values_list("series", "start", "count")) == [("hits", 7200, 7)]


def test_a_cursor_moves_forward_only(archive_db: str) -> None:
    """Two passes racing each advance the cursor to where they got: whatever the order, the
    furthest wins (a created cursor included)."""
    advance_cursor("counter", 3600, 7200, archive_db)
    advance_cursor("counter", 3600, 3600, archive_db)
    assert cursor("counter", 3600, archive_db) == 7200
    advance_cursor("counter", 3600, 10800, archive_db)
    assert cursor("counter", 3600, archive_db) == 10800
    assert cursor("counter", 86400, archive_db) is None
