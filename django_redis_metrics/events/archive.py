"""The event series' archive pass: each closed day's count of events (an ``ArchivedPeriod`` of
period "day") and its count per value of each indexed field (``ArchivedBreakdown``).

For each series in the catalogue, ``context.batch`` at a time, one pipelined round trip per
batch (per node on Redis Cluster) runs ``events_archive.lua`` in each series' slot over the days
closed since the kind's cursor (a day that had closed less than ``LATE_GRACE`` before the last
pass is counted again: an overlap rewritten idempotently, for events that reach it late). A
first pass, with no cursor yet, first asks each series for its oldest event (one more round
trip). The cursor moves only once the whole pass succeeded.

A day's breakdown of one field keeps at most ``MAX_BREAKDOWN_VALUES`` values, those counting the
most events; the others are summed under ``OTHER_BREAKDOWN``. Its cost: one row per value, field
and day (at most 1,001 per field and day).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..archive.base import (
    ArchiveContext,
    ArchiveReport,
    advance_cursor,
    cursor,
    upsert_breakdowns,
    upsert_periods,
)
from ..archive.horizon import cursor_after
from ..archive.models import ArchivedBreakdown, ArchivedPeriod
from ..core import catalogue
from ..core.connection import RedisClient
from ..core.drive import drive
from ..core.gather import pipelined_steps
from ..core.keys import metric_key, to_str
from ..core.labels.uniting import checked
from ..core.periods import Day, Period, days_between, get_zone
from ..core.steps import Op, Script
from .codec import score
from .keys import KIND
from .queries import script

#: Most values of one indexed field one day's breakdown keeps (those counting the most events).
MAX_BREAKDOWN_VALUES = 1000
#: The value the events of a day's other values are summed under.
OTHER_BREAKDOWN = "__other__"
#: Most days one script call counts (a first pass over a long retention takes more calls, all
#: in the same round trip): each day costs one ZCOUNT per value indexed.
DAYS_PER_CALL = 31


def archive_events(client: RedisClient, context: ArchiveContext) -> ArchiveReport:
    """One archive pass over every event series (an ``archive.base.Archiver``)."""
    report = ArchiveReport(KIND, dry_run=context.dry_run)
    zone = get_zone()
    last = Day.containing(context.now, zone).prev
    done = cursor(KIND, "day", context.using)
    resume = None if done is None else Day.containing(done, zone)
    for page in catalogue.pages(client, KIND, context.batch):
        firsts = _firsts(client, page, zone) if resume is None else dict.fromkeys(page, resume)
        periods, breakdowns = _read_page(client, firsts, last)
        report.series += len(page)
        if context.dry_run:
            report.rows += len(periods) + len(breakdowns)
        else:
            report.rows += upsert_periods(periods, context.using, ("metric", "count"))
            report.rows += upsert_breakdowns(breakdowns, context.using)
    if not context.dry_run:
        advance_cursor(KIND, "day", cursor_after(last.end_ts, context.now), context.using)
    return report


def _firsts(client: RedisClient, page: Sequence[str], zone: Any) -> dict[str, Period]:
    """The day of each series' oldest event (series holding none left out)."""
    ops = [Op("zrange", metric_key(KIND, name, "time"), 0, 0, withscores=True) for name in page]
    replies = checked(drive(pipelined_steps(ops), client))
    return {
        name: Day.containing(float(found[0][1]), zone)
        for name, found in zip(page, replies, strict=True)
        if found
    }


def _read_page(
    client: RedisClient, firsts: dict[str, Period], last: Period
) -> tuple[list[ArchivedPeriod], list[ArchivedBreakdown]]:
    """The rows of the series of ``firsts``, from each one's first day to ``last``."""
    jobs: list[tuple[str, list[Period]]] = []
    for name, first in firsts.items():
        if first.start_ts > last.start_ts:
            continue
        days: list[Period] = list(days_between(first.start_ts, last.start_ts, last.tz))
        for at in range(0, len(days), DAYS_PER_CALL):
            jobs.append((name, days[at : at + DAYS_PER_CALL]))
    calls = [_call(name, days) for name, days in jobs]
    replies = checked(drive(pipelined_steps(calls), client)) if calls else []
    periods: list[ArchivedPeriod] = []
    breakdowns: list[ArchivedBreakdown] = []
    for (name, days), reply in zip(jobs, replies, strict=True):
        starts = [int(day.start_ts) for day in days]
        for start, count in zip(starts, reply[0], strict=True):
            if int(count):
                periods.append(
                    ArchivedPeriod(
                        kind=KIND, series=name, metric=name, period="day", start=start,
                        count=int(count),
                    )
                )  # fmt: skip
        for at in range(1, len(reply), 2):
            field = to_str(reply[at])
            breakdowns += _breakdowns(name, field, starts, reply[at + 1])
    return periods, breakdowns


def _call(name: str, days: list[Period]) -> Script:
    keys = [metric_key(KIND, name, "time"), metric_key(KIND, name, "meta")]
    bounds = [score(days[0].start_ts), *(score(day.end_ts) for day in days)]
    return Script(script("events_archive"), keys, [metric_key(KIND, name, ""), *bounds])


def _breakdowns(
    name: str, field: str, starts: list[int], rows: list[Any]
) -> list[ArchivedBreakdown]:
    """One field's rows of each day: its ``MAX_BREAKDOWN_VALUES`` biggest values, the rest
    summed under ``OTHER_BREAKDOWN``."""
    width = len(starts) + 1
    per_day: list[dict[str, int]] = [{} for _ in starts]
    for at in range(0, len(rows), width):
        value = to_str(rows[at])
        for day, count in enumerate(rows[at + 1 : at + width]):
            if int(count):
                per_day[day][value] = int(count)
    out: list[ArchivedBreakdown] = []
    for start, counts in zip(starts, per_day, strict=True):
        for value, count in capped(counts).items():
            out.append(
                ArchivedBreakdown(series=name, field=field, value=value, start=start, count=count)
            )
    return out


def capped(counts: dict[str, int]) -> dict[str, int]:
    """``counts`` with at most ``MAX_BREAKDOWN_VALUES`` values (the biggest, ties by value)
    and the others' sum under ``OTHER_BREAKDOWN``."""
    if len(counts) <= MAX_BREAKDOWN_VALUES:
        return counts
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    kept = dict(ranked[:MAX_BREAKDOWN_VALUES])
    rest = sum(count for _value, count in ranked[MAX_BREAKDOWN_VALUES:])
    kept[OTHER_BREAKDOWN] = kept.get(OTHER_BREAKDOWN, 0) + rest
    return kept
