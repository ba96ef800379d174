"""Covering a range of consecutive days with the fewest calendar period keys.

Metrics kept per calendar period (``UniqueBitmap``, ``UniqueEstimate``) answer a range of days
with the union of some of their period keys: whole months inside the range first, then whole
ISO weeks not inside a month already taken, then the days left over (only the kinds of period
the metric keeps): 12 keys at most for any 30 days instead of 30. Overlaps are harmless in a
union, so a week straddling a month already taken is still used when it saves days.

The plan is computed on plain dates (no datetime per day). When every key can hold data, it
depends only on the kinds kept, the first and last day and the zone, so it is cached: planning
a 30-day range takes microseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from datetime import date, timedelta, tzinfo
from functools import lru_cache

from ..exceptions import NoDayKeys as NoDayKeys  # also importable from here
from .periods import PERIOD_NAMES, Day, Month, Period, Week

#: Distinct (kinds kept, first day, last day, zone) covers kept: a dashboard asks for few ranges.
COVER_CACHE_SIZE = 1024
ONE_DAY = timedelta(days=1)

Usable = Callable[[Period], bool]


def _month_start(day: date) -> date:
    return day.replace(day=1)


def _month_end(start: date) -> date:
    return date(start.year + start.month // 12, start.month % 12 + 1, 1)


def _week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _week_end(start: date) -> date:
    return start + timedelta(days=7)


def _month(start: date, zone: tzinfo) -> Period:
    return Month.of(start.year, start.month, zone)


def _week(start: date, zone: tzinfo) -> Period:
    iso = start.isocalendar()
    return Week.of(iso.year, iso.week, zone)


#: Per coarse kind: the start of the one holding a day, its end (exclusive), its period.
_COARSE: dict[str, tuple[Callable[[date], date], Callable[[date], date], Callable[..., Period]]] = {
    "month": (_month_start, _month_end, _month),
    "week": (_week_start, _week_end, _week),
}


@lru_cache(maxsize=COVER_CACHE_SIZE)
def cover(kept: tuple[str, ...], first: date, last: date, zone: tzinfo) -> tuple[Period, ...]:
    """The fewest keys whose union is exactly the days ``first`` to ``last`` (inclusive) in
    ``zone``, in time order; :class:`NoDayKeys` when ``kept`` has no day keys for a leftover
    day. Cached: the answer depends on nothing else."""
    return cover_usable(kept, first, last, zone)


def cover_usable(
    kept: Collection[str], first: date, last: date, zone: tzinfo, usable: Usable | None = None
) -> tuple[Period, ...]:
    """:func:`cover` where ``usable(period)`` says whether a period's key can still hold data
    (its retention is not over): a month or week that is not usable is replaced by its weeks or
    days, and a leftover day that is not usable is left out (it holds nothing)."""
    if last < first:
        raise ValueError("end must not be before start.")
    after = last + ONE_DAY
    periods: list[Period] = []
    taken: set[int] = set()  # days (ordinals) in a chosen month or week
    whole: set[int] = set()  # days in a whole kept month or week, usable or not
    for kind, (start_of, end_of, make) in _COARSE.items():
        if kind not in kept:
            continue
        before = set(taken)
        start = start_of(first)
        while start <= last:
            end = end_of(start)
            inside = range(start.toordinal(), end.toordinal())
            # Taken unless the months taken already cover every day of it.
            if start >= first and end <= after and not before.issuperset(inside):
                whole.update(inside)
                period = make(start, zone)
                if usable is None or usable(period):
                    periods.append(period)
                    taken.update(inside)
            start = end
    leftover = [day for day in range(first.toordinal(), last.toordinal() + 1) if day not in taken]
    if "day" not in kept:
        if not whole.issuperset(leftover):
            raise NoDayKeys(
                "keeps no day keys, so it cannot answer a range that is not made of whole "
                f"{' or '.join(p for p in PERIOD_NAMES if p in kept)}s."
            )
        leftover = []
    seen: set[float] = set()
    for ordinal in leftover:
        period = Day.of(date.fromordinal(ordinal), zone)
        # A date the zone skips is the next day: once.
        if period.start_ts not in seen and (usable is None or usable(period)):
            seen.add(period.start_ts)
            periods.append(period)
    return tuple(sorted(periods))


def cover_days(
    days: Sequence[Day],
    periods: Collection[str],
    owner: str,
    usable: Usable | None = None,
) -> list[Period]:
    """:func:`cover` of ``days`` (consecutive, oldest first; cached unless ``usable`` is given,
    see :func:`cover_usable`). ``owner`` names the metric in the ``ValueError`` raised when the
    range is not made of whole periods the metric keeps."""
    first, last, zone = days[0].date, days[-1].date, days[0].tz
    try:
        if usable is None:
            return list(cover(tuple(p for p in PERIOD_NAMES if p in periods), first, last, zone))
        return list(cover_usable(periods, first, last, zone, usable))
    except NoDayKeys as exc:
        raise NoDayKeys(f"{owner} {exc}") from None
