"""Range planning: which period keys cover a range of days, computed on dates, without I/O.

A range of days is covered by whole months, then whole ISO weeks, then the days left over (only
the kinds of period a bitmap keeps): 12 keys at most for any 30 days instead of 30. The cover
depends only on the kinds kept, the first and last day and the zone, so it is computed once on
plain dates (no datetime per day) and cached: planning a 30-day range takes microseconds. Kept
free of I/O so that the sync and async APIs plan their queries the same way.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, tzinfo
from functools import lru_cache

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

    Months first, then ISO weeks whose first day in the range is not yet covered, then days.
    """
    if last < first:
        raise ValueError("end must not be before start.")
    after = last + ONE_DAY
    covered: set[date] = set()
    chosen: list[tuple[str, date]] = []
    for kind in ("month", "week"):
        if kind not in kept:
            continue
        start_of, end_of = _KINDS[kind]
        seen: set[date] = set()
        day = first
        while day <= last:
            start = start_of(day)
            if start not in seen and day not in covered:
                seen.add(start)
                end = end_of(start)
                if start >= first and end <= after:
                    chosen.append((kind, start))
                    covered.update(start + timedelta(days=i) for i in range((end - start).days))
            day += ONE_DAY
    leftover = []
    day = first
    while day <= last:
        if day not in covered:
            leftover.append(day)
        day += ONE_DAY
    if leftover and "day" not in kept:
        raise ValueError(
            f"keeps no day keys, so it cannot answer a range that is not made of whole "
            f"{' or '.join(kept)}s."
        )
    periods: list[Period] = [
        Month.of(start.year, start.month, zone) if kind == "month" else Week.of(*_iso(start), zone)
        for kind, start in chosen
    ]
    days: dict[float, Period] = {}
    for day in leftover:  # a date the zone skips (no instant) is the next day: kept once
        period = Day.of(day, zone)
        days.setdefault(period.start_ts, period)
    return tuple(sorted([*periods, *days.values()]))


def _iso(start: date) -> tuple[int, int]:
    iso = start.isocalendar()
    return iso.year, iso.week


def split(periods: tuple[Period, ...], settled: float) -> tuple[tuple[Period, ...], ...]:
    """``periods`` as (those over by ``settled``, those still running), each part if any."""
    over = tuple(p for p in periods if p.end_ts <= settled)
    running = tuple(p for p in periods if p.end_ts > settled)
    return tuple(part for part in (over, running) if part)
