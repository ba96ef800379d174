"""Query planning without I/O: which period keys cover a range of days, and the script calls of
a retention table.

A range of days is covered by whole months, then whole ISO weeks, then the days left over (only
the kinds of period a bitmap keeps): 12 keys at most for any 30 days instead of 30. The cover
depends only on the kinds kept, the first and last day and the zone, so it is computed once on
plain dates (no datetime per day) and cached: planning a 30-day range takes microseconds. Kept
free of I/O so that the sync and async APIs plan their queries the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta, tzinfo
from functools import lru_cache
from typing import Any

from ..core.periods import Day, Month, Period, Week
from ..core.timeutil import When, to_timestamp

#: Distinct (kinds kept, first day, last day, zone) covers kept: a dashboard asks for few ranges.
COVER_CACHE_SIZE = 1024
ONE_DAY = timedelta(days=1)


def local_date(when: When | date, zone: tzinfo) -> date:
    """The day holding ``when`` in ``zone``; a ``date`` names its day directly."""
    if isinstance(when, date) and not isinstance(when, datetime):
        return when
    return datetime.fromtimestamp(to_timestamp(when), zone).date()


def _month_start(day: date) -> date:
    return day.replace(day=1)


def _month_end(start: date) -> date:
    return date(start.year + start.month // 12, start.month % 12 + 1, 1)


def _week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _week_end(start: date) -> date:
    return start + timedelta(days=7)


_KINDS = {"month": (_month_start, _month_end), "week": (_week_start, _week_end)}


@lru_cache(maxsize=COVER_CACHE_SIZE)
def cover(kept: tuple[str, ...], first: date, last: date, zone: tzinfo) -> tuple[Period, ...]:
    """The fewest keys whose union is exactly the days ``first`` to ``last`` (inclusive) in
    ``zone``, in time order; ``ValueError`` when ``kept`` has no day keys for a leftover day.

    Whole months first, then whole ISO weeks not inside a chosen month, then the days left.
    """
    if last < first:
        raise ValueError("end must not be before start.")
    after = last + ONE_DAY
    chosen: list[tuple[date, date, str]] = []
    months: list[tuple[date, date]] = []
    if "month" in kept:
        start = _month_start(first)
        while start <= last:
            end = _month_end(start)
            if start >= first and end <= after:
                chosen.append((start, end, "month"))
                months.append((start, end))
            start = end
    if "week" in kept:
        start = _week_start(first)
        while start <= last:
            end = _week_end(start)
            # A whole week is taken unless whole months already cover every day of it.
            if start >= first and end <= after and not _covered(start, end, months):
                chosen.append((start, end, "week"))
            start = end
    covered = sorted((start, end) for start, end, _kind in chosen)
    leftover = []
    day, index = first, 0
    while day <= last:
        while index < len(covered) and covered[index][1] <= day:
            index += 1
        if not any(s <= day < e for s, e in covered[index : index + 2]):
            leftover.append(day)
        day += ONE_DAY
    if leftover and "day" not in kept:
        raise ValueError(
            f"keeps no day keys, so it cannot answer a range that is not made of whole "
            f"{' or '.join(kept)}s."
        )
    parts = [(start, end, kind) for start, end, kind in chosen]
    parts += [(day, day + ONE_DAY, "day") for day in leftover]
    periods: list[Period] = []
    seen: set[float] = set()
    for start, _end, kind in sorted(parts):
        if kind == "month":
            periods.append(Month.of(start.year, start.month, zone))
        elif kind == "week":
            periods.append(Week.of(*_iso(start), zone))
        else:
            period = Day.of(start, zone)
            if period.start_ts not in seen:  # a date the zone skips is the next day: once
                seen.add(period.start_ts)
                periods.append(period)
    return tuple(periods)


def _covered(start: date, end: date, spans: list[tuple[date, date]]) -> bool:
    """Whether every day of ``[start, end)`` lies in one of ``spans``."""
    day = start
    while day < end:
        if not any(s <= day < e for s, e in spans):
            return False
        day += ONE_DAY
    return True


def _iso(start: date) -> tuple[int, int]:
    iso = start.isocalendar()
    return iso.year, iso.week


def split(periods: tuple[Period, ...], settled: float) -> tuple[tuple[Period, ...], ...]:
    """``periods`` as (those over by ``settled``, those still running), each part if any."""
    over = tuple(p for p in periods if p.end_ts <= settled)
    running = tuple(p for p in periods if p.end_ts > settled)
    return tuple(part for part in (over, running) if part)


def cohort_calls(
    keys: list[str], temp: Callable[[int], str], most_sources: int
) -> list[tuple[int, list[str]]]:
    """The script calls of a retention table over the period ``keys``: per row, its first
    period's key, up to ``most_sources - 1`` later ones and a temporary key ``temp(n)``."""
    step = most_sources - 1
    calls: list[tuple[int, list[str]]] = []
    for row in range(len(keys)):
        later = keys[row + 1 :]
        for chunk in range(0, max(len(later), 1), step):
            calls.append((row, [keys[row], *later[chunk : chunk + step], temp(len(calls))]))
    return calls


def cohort_rows(
    periods: int, calls: list[tuple[int, list[str]]], replies: Sequence[Any]
) -> list[list[int]]:
    """The table from the calls' replies (each ``[head count, count with each later key]``)."""
    rows: list[list[int]] = [[] for _ in range(periods)]
    for (row, _), reply in zip(calls, replies, strict=True):
        if isinstance(reply, Exception):
            raise reply
        counts = [int(v) for v in reply]
        rows[row] += counts[1:] if rows[row] else counts
    return rows
