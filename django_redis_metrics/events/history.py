"""An event series' reads beyond its retention: ``history()`` (events per day) and
``count_by()`` over days Redis no longer holds, from the archive (``events/archive.py`` writes
each closed day's count and its count per value of each indexed field).

A day Redis has begun to forget (it starts more than ``retention`` seconds ago) is read from
the archive where the archive keeps it, else from what Redis still holds of it; later days
from Redis. The archive counts whole days: a ``count_by`` range starting in an archived day
counts that whole day. Days are calendar days in ``TIME_ZONE``, as the archive pass writes
them. A read reaching no day Redis has begun to forget never touches the database.

The archive's models are imported when a read needs them (this module is imported with the
models, before Django's apps are ready).
"""

from __future__ import annotations

import time
from typing import Any

from asgiref.sync import sync_to_async

from ..archive.horizon import MAX_HISTORY_PERIODS
from ..archive.missing import archive_tables
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
        first: Redis's count of each day (one pipelined round trip), but the archive's for a
        day Redis has begun to forget (older than ``retention``) that it keeps (one query);
        at most ``MAX_HISTORY_PERIODS`` (2,000) days a call."""
        days = self._history_days(start, end)
        counts = drive(self._history_steps(days))
        return _preferred(counts, _archived_days(self.name, self._forgetting(days)))

    async def ahistory(self, start: When, end: When) -> list[tuple[int, int]]:
        """``history`` awaited."""
        days = self._history_days(start, end)
        counts = await adrive(self._history_steps(days))
        forgetting = self._forgetting(days)
        archived = await sync_to_async(_archived_days)(self.name, forgetting) if forgetting else {}
        return _preferred(counts, archived)

    def count_by(self, field: str, start: When, end: When) -> dict[str, int]:
        """Events per value of ``field`` from ``start`` to ``end`` (see
        ``SeriesQueries.count_by``). For an indexed field, the days up to the last one the
        archive keeps of those Redis has begun to forget (older than ``retention``) are
        counted, whole, from the archive's breakdowns, and Redis counts the rest."""
        lo, hi, reach = self._count_by_reach(field, start, end)
        span = _archived_span(self.name, lo, hi, reach) if reach else None
        rest = _redis_range(lo, hi, span)
        found = drive(self._count_by_steps(field, *rest)) if rest else {}
        return _added(found, _archived_breakdown(self.name, field, span))

    async def acount_by(self, field: str, start: When, end: When) -> dict[str, int]:
        """``count_by`` awaited."""
        lo, hi, reach = self._count_by_reach(field, start, end)
        span = await sync_to_async(_archived_span)(self.name, lo, hi, reach) if reach else None
        rest = _redis_range(lo, hi, span)
        found = await adrive(self._count_by_steps(field, *rest)) if rest else {}
        if span is None:
            return found
        return _added(found, await sync_to_async(_archived_breakdown)(self.name, field, span))

    def _history_days(self, start: When, end: When) -> list[Period]:
        lo, hi = time_range(start, end)
        zone = get_zone()
        first, last = Day.containing(lo, zone), Day.containing(hi, zone)
        count = round((last.start_ts - first.start_ts) / 86400) + 1
        if count > MAX_HISTORY_PERIODS:
            raise ValueError(
                f"A history reads at most {MAX_HISTORY_PERIODS:,} days; {lo} to {hi} holds "
                f"{count:,}: read it in parts."
            )
        return list(days_between(lo, hi, zone))

    def _forgetting(self, days: list[Period]) -> list[Period]:
        """The days of ``days`` Redis has begun to forget (they start before the retention)."""
        horizon = time.time() - self.retention
        return [day for day in days if day.start_ts < horizon]

    def _history_steps(self, days: list[Period]) -> Steps[list[tuple[int, int]]]:
        ops = [Op("zcount", self.time_key, score(d.start_ts), f"({score(d.end_ts)}") for d in days]
        counts = checked((yield from pipelined_steps(ops))) if ops else []
        return [(int(d.start_ts), int(c)) for d, c in zip(days, counts, strict=True)]

    def _count_by_reach(self, field: str, start: When, end: When) -> tuple[float, float, float]:
        """The range, and the start of the day Redis has begun to forget when the range
        reaches it and the field has archived breakdowns (else 0: Redis alone)."""
        validate_field_name(field)
        lo, hi = time_range(start, end)
        horizon = time.time() - self.retention
        if lo >= horizon or field not in self.index:
            return lo, hi, 0
        return lo, hi, Day.containing(horizon, get_zone()).start_ts


def _archived_span(name: str, lo: float, hi: float, reach: float) -> tuple[int, int] | None:
    """``(first day start, last day start)`` the archive counts: from ``lo``'s day to the
    last day it keeps of ``name`` no later than ``reach``'s day and ``hi``'s (``None``: none)."""
    from django.db.models import Max

    from ..archive.models import ArchivedPeriod

    zone = get_zone()
    first = int(Day.containing(lo, zone).start_ts)
    last = min(reach, Day.containing(hi, zone).start_ts)
    rows = ArchivedPeriod.objects.using(conf.ARCHIVE_DATABASE).filter(
        kind=KIND, series=name, period="day", start__gte=first, start__lte=last
    )
    with archive_tables(conf.ARCHIVE_DATABASE):
        found = rows.aggregate(last=Max("start"))["last"]
    return None if found is None else (first, int(found))


def _redis_range(lo: float, hi: float, span: tuple[int, int] | None) -> tuple[float, float] | None:
    """What Redis counts: the range after the archive's last day (``None``: nothing)."""
    if span is None:
        return lo, hi
    after = Day.containing(span[1], get_zone()).end_ts
    return (max(lo, after), hi) if hi >= after else None


def _archived_days(name: str, days: list[Period]) -> dict[int, int]:
    """The archived count of each of ``days`` that the archive keeps, by day start."""
    if not days:
        return {}
    from ..archive.models import ArchivedPeriod

    rows = ArchivedPeriod.objects.using(conf.ARCHIVE_DATABASE).filter(
        kind=KIND,
        series=name,
        period="day",
        start__gte=int(days[0].start_ts),
        start__lte=int(days[-1].start_ts),
    )
    with archive_tables(conf.ARCHIVE_DATABASE):
        return dict(rows.values_list("start", "count"))


def _preferred(counts: list[tuple[int, int]], archived: dict[int, int]) -> list[tuple[int, int]]:
    """Redis's counts, the archive's where it keeps the day."""
    return [(start, archived.get(start, count)) for start, count in counts]


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
    with archive_tables(conf.ARCHIVE_DATABASE):
        return {value: int(total) for value, total in totals}


def _added(first: dict[str, int], second: dict[str, Any]) -> dict[str, int]:
    out = dict(first)
    for value, count in second.items():
        out[value] = out.get(value, 0) + int(count)
    return out
