"""The archive pass of the kinds kept per calendar period: unique bitmaps and estimates.

For each series in the kind's catalogue (labelled series too), ``context.batch`` at a time, one
pipelined round trip per batch (per node on Redis Cluster) runs ``archive_periods.lua`` in each
series' slot: it reads, from the series' period indexes, the periods that closed since the
kind's cursor (a period that had closed less than ``LATE_GRACE`` before the last pass is read
again: an overlap rewritten idempotently, for the writes that reach it late) and answers each
period's count and, where later unions need them, its bits (a bitmap's weeks and months) or
registers (every period of an estimate). Rows are upserted; the cursor of each period name moves
only once the whole pass succeeded, so a pass killed midway and run again archives exact counts,
and a steady pass reads only what closed since.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..core import catalogue
from ..core.connection import RedisClient
from ..core.drive import drive
from ..core.gather import pipelined_steps
from ..core.keys import metric_key
from ..core.labels.labelling import SEPARATOR
from ..core.labels.uniting import checked
from ..core.periods import get_zone, period_class
from ..core.scripts import ScriptLibrary
from ..core.steps import Script
from .base import ArchiveContext, ArchiveReport, advance_cursor, cursor, upsert_periods
from .horizon import ARCHIVED_PERIODS, cursor_after
from .models import ArchivedPeriod

script = ScriptLibrary(__name__.rpartition(".")[0])

#: Most periods of one name a script call reads of one series (a series with more, on a first
#: pass, is read on in further round trips): bounds the memory a reply holds (a month of a
#: bitmap marking 10 million ids is 1.25 MB).
PERIODS_PER_CALL = 16
#: Row fields an upsert sets.
FIELDS = ("metric", "count", "data")


@dataclass(frozen=True)
class PeriodicSpec:
    """What the pass needs of one kind: its name, which periods keep their value, and how."""

    kind: str
    #: Period names whose value (bits, registers) is archived with the count.
    whole: frozenset[str]
    #: How a value is stored (``data``): e.g. zlib-compressed bits.
    pack: Callable[[bytes], bytes]


def metric_of(series: str) -> str:
    """The metric a catalogue member belongs to (a labelled series' metric's own name)."""
    return series.partition(SEPARATOR)[0]


def archive_periodic(
    client: RedisClient, context: ArchiveContext, spec: PeriodicSpec
) -> ArchiveReport:
    """One pass of ``spec.kind``: every series' periods closed by ``context.now``."""
    report = ArchiveReport(spec.kind, dry_run=context.dry_run)
    zone = get_zone()
    ranges: dict[str, tuple[str, float]] = {}
    until: dict[str, int] = {}
    for name in ARCHIVED_PERIODS:
        last = period_class(name).containing(context.now, zone).prev
        done = cursor(spec.kind, name, context.using)
        lo = "-inf" if done is None else repr(period_class(name).containing(done, zone).start_ts)
        ranges[name] = (lo, last.start_ts)
        until[name] = cursor_after(last.end_ts, context.now)
    for page in catalogue.pages(client, spec.kind, context.batch):
        rows = _read_page(client, spec, page, ranges)
        report.series += len(page)
        report.rows += len(rows) if context.dry_run else upsert_periods(rows, context.using, FIELDS)
    if not context.dry_run:
        for name, moment in until.items():
            advance_cursor(spec.kind, name, moment, context.using)
    return report


def _read_page(
    client: RedisClient,
    spec: PeriodicSpec,
    page: Sequence[str],
    ranges: dict[str, tuple[str, float]],
) -> list[ArchivedPeriod]:
    """The rows of ``page``'s series: one round trip, and one more for each further
    ``PERIODS_PER_CALL`` periods a series holds (first passes only)."""
    rows: list[ArchivedPeriod] = []
    todo = {series: dict(ranges) for series in page}
    while todo:
        order = list(todo)
        calls = [_call(spec, series, todo[series]) for series in order]
        replies = checked(drive(pipelined_steps(calls), client))
        again: dict[str, dict[str, tuple[str, float]]] = {}
        for series, wanted, reply in zip(order, (todo[s] for s in order), replies, strict=True):
            for name, found in zip(wanted, reply, strict=True):
                _rows(rows, spec, series, name, found[2:])
                if int(found[0]) >= PERIODS_PER_CALL:  # more may follow the last listed
                    last = float(found[1])
                    again.setdefault(series, {})[name] = (f"({last!r}", wanted[name][1])
        todo = again
    return rows


def _call(spec: PeriodicSpec, series: str, wanted: dict[str, tuple[str, float]]) -> Script:
    keys = [metric_key(spec.kind, series, "index", name) for name in wanted]
    args: list[Any] = [metric_key(spec.kind, series, ""), PERIODS_PER_CALL, spec.kind]
    for name, (lo, hi) in wanted.items():
        args += [name, lo, repr(hi), int(name in spec.whole)]
    return Script(script("archive_periods"), keys, args)


def _rows(
    rows: list[ArchivedPeriod], spec: PeriodicSpec, series: str, name: str, found: list[Any]
) -> None:
    """Append the rows of one index's reply."""
    for at in range(0, len(found), 3):
        value = found[at + 2]
        rows.append(
            ArchivedPeriod(
                kind=spec.kind,
                series=series,
                metric=metric_of(series),
                period=name,
                start=int(float(found[at])),
                count=int(found[at + 1]),
                data=spec.pack(value) if value else None,
            )
        )
