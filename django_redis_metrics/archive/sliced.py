"""The archiver of the kinds kept in slices (counters, statistics, gauges): one pass copies the
closed slices Redis holds into ``ArchivedSlice`` rows.

For each archived precision (``ARCHIVE_PRECISIONS``), a pass reads the slices that closed since
the kind's cursor (slice end <= the pass's ``now``), from one slice before the cursor (rewritten
idempotently: a late write to the slice just archived is picked up), walking the kind's
catalogue ``ARCHIVE_BATCH`` series at a time. Each batch is one pipeline (one round trip per
node on Redis Cluster: every key of a series shares its hash tag): an ``HMGET`` of the few
slices wanted per series and precision, or one ``HGETALL`` (bounded by the metric's samples)
on a first pass or after a long pause. A series without that precision has no hash and gives
no row. Each batch is then written in one transaction of upserts that *set* the values Redis
holds, so a batch written twice (two passes racing, a pass rerun after it was killed) counts
nothing twice. The cursors move only once the kind's whole pass succeeded: a pass killed
midway is redone from the same place by the next one.

A steady pass therefore costs O(new slices): a precision with no slice closed since its cursor
is not read at all.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from ..core import catalogue
from ..core.connection import RedisClient
from ..core.keys import metric_key, to_str
from ..core.labels.labelling import split
from ..core.timeutil import slice_start
from .base import ArchiveContext, ArchiveReport, advance_cursor, cursor, upsert_slices
from .models import ArchivedSlice

#: Most slices of one series and precision read by ``HMGET``; a wider range (a first pass,
#: a cursor left far behind) reads the whole hash, which its samples bound, with ``HGETALL``.
HMGET_MOST = 32
#: Test-only: seconds a pass sleeps after each batch it wrote, so that a test can kill it
#: midway (``tests/archive/test_crash.py``). Never set it in production.
PAUSE_ENVIRON = "DRM_ARCHIVE_TEST_PAUSE"

#: A slice's row values from its text in Redis: ``(series, metric, start, raw) -> row``.
RowOf = Callable[[str, str, int, int, Any], ArchivedSlice]


@dataclass(frozen=True)
class Plan:
    """What a pass reads of one precision: the closed slices from ``low`` to ``high`` (slice
    starts, inclusive); ``low`` is ``None`` on a first pass (everything Redis holds)."""

    precision: int
    low: int | None
    high: int

    def wanted(self) -> list[int] | None:
        """The slice starts to ``HMGET``, or ``None``: read the whole hash."""
        if self.low is None or (self.high - self.low) // self.precision + 1 > HMGET_MOST:
            return None
        return list(range(self.low, self.high + 1, self.precision))

    def holds(self, start: int) -> bool:
        return start <= self.high and (self.low is None or start >= self.low)


def plans(kind: str, context: ArchiveContext) -> list[Plan]:
    """The precisions with slices closed since their cursor, and the range each pass reads."""
    found = []
    for precision in context.precisions:
        closed = slice_start(context.now, precision)  # the open slice's start: the end of closed
        until = cursor(kind, precision, context.using)
        if until is not None and until >= closed:
            continue  # nothing closed since the last pass
        low = None if until is None else until - precision
        found.append(Plan(precision, low, closed - precision))
    return found


def archive_sliced(
    kind: str,
    client: RedisClient,
    context: ArchiveContext,
    row_of: RowOf,
    fields: Sequence[str],
) -> ArchiveReport:
    """One pass of ``kind``: every closed slice since the cursors, upserted (``fields`` set)."""
    report = ArchiveReport(kind, dry_run=context.dry_run)
    todo = plans(kind, context)
    if not todo:
        return report
    pause = float(os.environ.get(PAUSE_ENVIRON) or 0)
    for names in catalogue.pages(client, kind, context.batch):
        rows = _batch_rows(kind, client, names, todo, row_of)
        if not context.dry_run and rows:
            with transaction.atomic(using=context.using):
                upsert_slices(rows, context.using, fields)
        report.series += len(names)
        report.rows += len(rows)
        if pause:
            time.sleep(pause)
    if not context.dry_run:
        for plan in todo:
            advance_cursor(kind, plan.precision, plan.high + plan.precision, context.using)
    return report


def _batch_rows(
    kind: str, client: RedisClient, names: list[str], todo: list[Plan], row_of: RowOf
) -> list[ArchivedSlice]:
    """The rows of one batch of series: one pipeline (one round trip per node)."""
    pipe = client.pipeline(transaction=False)
    asked: list[tuple[str, Plan, list[int] | None]] = []
    for name in names:
        for plan in todo:
            key = metric_key(kind, name, plan.precision)
            wanted = plan.wanted()
            if wanted is None:
                pipe.hgetall(key)
            else:
                pipe.hmget(key, [str(start) for start in wanted])
            asked.append((name, plan, wanted))
    rows = []
    for (name, plan, wanted), reply in zip(asked, pipe.execute(), strict=True):
        found: Iterable[tuple[int, Any]]
        if wanted is None:
            found = ((int(to_str(start)), raw) for start, raw in reply.items())
        else:
            found = ((start, raw) for start, raw in zip(wanted, reply, strict=True))
        metric = split(name).name
        rows += [
            row_of(name, metric, plan.precision, start, raw)
            for start, raw in found
            if raw is not None and plan.holds(start)
        ]
    # One order for every pass: two passes upserting the same rows at once lock them in the
    # same order, so neither waits on the other in a cycle (no deadlock on PostgreSQL).
    rows.sort(key=lambda row: (row.series, row.precision, row.start))
    return rows
