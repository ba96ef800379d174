"""What every kind's archiver shares: the pass's context and report, the upserts, the cursors.

An *archiver* (one per kind, named by its ``Kind.archiver``) reads what Redis still holds of
the kind's closed slices or periods and writes it to the archive's tables. Every write is an
upsert that *sets* the values Redis holds, keyed by what they describe: a pass run twice, on two
hosts at once, or rerun after it was killed midway, writes the same rows again and counts
nothing twice; a slice archived before it closed is corrected by the next pass.

A *cursor* remembers, per kind and precision, up to when closed slices are archived, so a pass
reads only what closed since (plus one slice of overlap, rewritten idempotently).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from django.db import transaction

from ..core.connection import RedisClient
from .models import ArchiveCursor, ArchivedBreakdown, ArchivedPeriod, ArchivedSlice

SLICE_KEY = ("kind", "series", "precision", "start")
PERIOD_KEY = ("kind", "series", "period", "start")
BREAKDOWN_KEY = ("series", "field", "value", "start")


@dataclass(frozen=True)
class ArchiveContext:
    """What one pass archives, where, and as of when."""

    #: The database alias written to (``ARCHIVE_DATABASE``).
    using: str
    #: The pass's clock, epoch seconds: a slice ending at or before it is closed.
    now: float
    #: Slice lengths archived for counters, statistics and gauges (``ARCHIVE_PRECISIONS``).
    precisions: tuple[int, ...]
    #: Series read and written per step (``ARCHIVE_BATCH``).
    batch: int
    #: Read and count, write nothing.
    dry_run: bool = False


@dataclass
class ArchiveReport:
    """What one pass archived of one kind."""

    kind: str
    dry_run: bool = False
    series: int = 0
    rows: int = 0

    def summary(self) -> str:
        verb = "would archive" if self.dry_run else "archived"
        return f"{self.kind}: {verb} {self.rows:,} rows of {self.series:,} series"


#: One kind's pass: ``archiver(client, context) -> report``.
Archiver = Callable[[RedisClient, ArchiveContext], ArchiveReport]


def upsert_slices(rows: Sequence[ArchivedSlice], using: str, fields: Sequence[str]) -> int:
    """Write ``rows``, setting ``fields`` of those already archived; returns ``len(rows)``."""
    if rows:
        ArchivedSlice.objects.using(using).bulk_create(
            rows, update_conflicts=True, unique_fields=SLICE_KEY, update_fields=fields
        )
    return len(rows)


def upsert_periods(rows: Sequence[ArchivedPeriod], using: str, fields: Sequence[str]) -> int:
    """Write ``rows``, setting ``fields`` of the periods already archived."""
    if rows:
        ArchivedPeriod.objects.using(using).bulk_create(
            rows, update_conflicts=True, unique_fields=PERIOD_KEY, update_fields=fields
        )
    return len(rows)


def upsert_breakdowns(rows: Sequence[ArchivedBreakdown], using: str) -> int:
    """Write ``rows``, setting the count of the breakdowns already archived."""
    if rows:
        ArchivedBreakdown.objects.using(using).bulk_create(
            rows, update_conflicts=True, unique_fields=BREAKDOWN_KEY, update_fields=("count",)
        )
    return len(rows)


def cursor(kind: str, precision: str | int, using: str) -> int | None:
    """Up to when ``kind``'s ``precision`` is archived (epoch seconds), or ``None``: never."""
    found = (
        ArchiveCursor.objects.using(using)
        .filter(kind=kind, precision=str(precision))
        .values_list("until", flat=True)
        .first()
    )
    return found


def advance_cursor(kind: str, precision: str | int, until: int, using: str) -> None:
    """Move the cursor of ``kind``'s ``precision`` to ``until``; never back (two passes at once
    each move it to where they got, and the furthest wins)."""
    rows = ArchiveCursor.objects.using(using)
    with transaction.atomic(using=using):
        found, created = rows.get_or_create(
            kind=kind, precision=str(precision), defaults={"until": until}
        )
        if not created:
            # A filtered UPDATE: of two passes, the one that got further wins, whatever the order.
            rows.filter(pk=found.pk, until__lt=until).update(until=until)
