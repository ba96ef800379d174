"""An event series' reads beyond its retention: ``history()`` (events per day) and
``count_by()`` over days Redis no longer holds, from the archive (``events/archive.py`` writes
each closed day's count and its count per value of each indexed field).

A day is read from Redis while it lies wholly within the series' retention (its start no
older than ``retention`` seconds), else from the archive. The archive counts whole days: a
``count_by`` range starting in an archived day counts that whole day. Days are calendar days
in ``TIME_ZONE``, as the archive pass writes them.

The archive's models are imported when a read needs them (this module is imported with the
models, before Django's apps are ready).
"""

from __future__ import annotations

import time
from typing import Any

from asgiref.sync import sync_to_async

from ..archive.horizon import MAX_HISTORY_PERIODS
from ..conf import conf
from ..core.drive import adrive, drive
from ..core.gather import pipelined_steps
from ..core.labels.uniting import checked
from ..core.periods import Day, Period, days_between, get_zone
from ..core.steps import Op, Steps
from ..core.timeutil import When
from .aio import SeriesAsync
from .codec import score, time_range, validate_field_name
from .keys import KIND


class SeriesHistory(SeriesAsync):
    """Mixed into :class:`~.model.EventSeries`."""

    name: str

    def history(self, start: When, end: When) -> list[tuple[int, int]]:
        """``(day start, events)`` of each day from ``start``'s day to ``end``'s, oldest
        first: Redis for the days it holds whole (one pipelined round trip), the archive for
        older ones (one query); at most ``MAX_HISTORY_PERIODS`` (2,000) days a call."""
        held, gone = self._history_days(start, end)
        return _merged(drive(self._history_steps(held)), _archived_days(self.name, gone))

    async def ahistory(self, start: When, end: When) -> list[tuple[int, int]]:
        """``history`` awaited."""
        held, gone = self._history_days(start, end)
        counts = await adrive(self._history_steps(held))
        return _merged(counts, await sync_to_async(_archived_days)(self.name, gone))

    def count_by(self, field: str, start: When, end: When) -> dict[str, int]:
        """Events per value of ``field`` from ``start`` to ``end`` (see
        ``SeriesQueries.count_by``); the days Redis no longer holds are counted, whole, from
        the archive's breakdowns (indexed fields only)."""
        archived, rest = self._count_by_plan(field, start, end)
        found = drive(self._count_by_steps(field, *rest)) if rest else {}
        return _added(found, _archived_breakdown(self.name, field, archived))

    async def acount_by(self, field: str, start: When, end: When) -> dict[str, int]:
        """``count_by`` awaited."""
        archived, rest = self._count_by_plan(field, start, end)
        found = await adrive(self._count_by_steps(field, *rest)) if rest else {}
        return _added(found, await sync_to_async(_archived_breakdown)(self.name, field, archived))

    def _history_days(self, start: When, end: When) -> tuple[list[Period], list[Period]]:
        lo, hi = time_range(start, end)
        zone = get_zone()
        first, last = Day.containing(lo, zone), Day.containing(hi, zone)
        count = round((last.start_ts - first.start_ts) / 86400) + 1
        if count > MAX_HISTORY_PERIODS:
            raise ValueError(
                f"A history reads at most {MAX_HISTORY_PERIODS:,} days; {lo} to {hi} holds "
                f"{count:,}: read it in parts."
            )
        days: list[Period] = list(days_between(lo, hi, zone))
        horizon = time.time() - self.retention
        return [d for d in days if d.start_ts >= horizon], [d for d in days if d.start_ts < horizon]

    def _history_steps(self, days: list[Period]) -> Steps[list[tuple[int, int]]]:
        ops = [Op("zcount", self.time_key, score(d.start_ts), f"({score(d.end_ts)}") for d in days]
        counts = checked((yield from pipelined_steps(ops))) if ops else []
        return [(int(d.start_ts), int(c)) for d, c in zip(days, counts, strict=True)]

    def _count_by_plan(
        self, field: str, start: When, end: When
    ) -> tuple[tuple[int, int] | None, tuple[float, float] | None]:
        """The archived days' span ``(first start, last start)`` and the range Redis counts."""
        validate_field_name(field)
        lo, hi = time_range(start, end)
        horizon = time.time() - self.retention
        if lo >= horizon or field not in self.index:
            return None, (lo, hi)
        zone = get_zone()
        whole = Day.containing(horizon, zone)
        cut = whole.start_ts if whole.start_ts >= horizon else whole.end_ts
        last = Day.containing(min(hi, cut - 1), zone)
        archived = (int(Day.containing(lo, zone).start_ts), int(last.start_ts))
        return archived, ((cut, hi) if hi >= cut else None)


def _archived_days(name: str, days: list[Period]) -> list[tuple[int, int]]:
    """The archived count of each of ``days`` (0 where none was archived)."""
    if not days:
        return []
    from ..archive.models import ArchivedPeriod

    rows = ArchivedPeriod.objects.using(conf.ARCHIVE_DATABASE).filter(
        kind=KIND,
        series=name,
        period="day",
        start__gte=int(days[0].start_ts),
        start__lte=int(days[-1].start_ts),
    )
    found = dict(rows.values_list("start", "count"))
    return [(int(d.start_ts), found.get(int(d.start_ts), 0)) for d in days]


def _archived_breakdown(name: str, field: str, span: tuple[int, int] | None) -> dict[str, int]:
    """Events per value of ``field`` over the archived days of ``span``."""
    if span is None:
        return {}
    from django.db.models import Sum

    from ..archive.models import ArchivedBreakdown

    rows = ArchivedBreakdown.objects.using(conf.ARCHIVE_DATABASE).filter(
        series=name, field=field, start__gte=span[0], start__lte=span[1]
    )
    totals = rows.values("value").annotate(total=Sum("count")).values_list("value", "total")
    return {value: int(total) for value, total in totals}


def _merged(held: list[tuple[int, int]], archived: list[tuple[int, int]]) -> list[tuple[int, int]]:
    return sorted([*held, *archived])


def _added(first: dict[str, int], second: dict[str, Any]) -> dict[str, int]:
    out = dict(first)
    for value, count in second.items():
        out[value] = out.get(value, 0) + int(count)
    return out
