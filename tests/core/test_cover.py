"""The cached range cover (``core/cover.py``, planned on plain dates) gives exactly the periods of
the day-by-day planner it replaced, for bitmaps (every key usable) and for estimates (keys past
their retention replaced by finer ones), in zones with DST changes."""

from __future__ import annotations

import random
from collections.abc import Callable, Collection
from datetime import date, timedelta
from zoneinfo import ZoneInfo

import pytest

from django_redis_metrics.core.cover import NoDayKeys, cover, cover_days
from django_redis_metrics.core.periods import PERIOD_NAMES, Day, Period, period_class


def reference(
    days: list[Day], periods: Collection[str], usable: Callable[[Period], bool]
) -> list[Period] | None:
    """The day-by-day planner (whole months, then weeks with a day not yet covered, then
    days); ``None`` where it refuses the range."""
    first, last = days[0].start_ts, days[-1].end_ts
    covered: set[float] = set()
    whole: set[float] = set()
    chosen: list[Period] = []
    for coarse in ("month", "week"):
        if coarse not in periods:
            continue
        seen: set[float] = set()
        for day in days:
            period = period_class(coarse).containing(day.start_ts, day.tz)
            if period.start_ts in seen or day.start_ts in covered:
                continue
            seen.add(period.start_ts)
            if period.start_ts >= first and period.end_ts <= last:
                inside = {d.start_ts for d in period.days()}
                whole.update(inside)
                if usable(period):
                    chosen.append(period)
                    covered.update(inside)
    leftover = [d for d in days if d.start_ts not in covered]
    if "day" in periods:
        return sorted([*chosen, *(d for d in leftover if usable(d))])
    if any(d.start_ts not in whole for d in leftover):
        return None
    return sorted(chosen)


KEPT = [("day",), ("day", "week"), ("day", "month"), ("day", "week", "month"), ("week", "month")]


@pytest.mark.parametrize("zone", ["UTC", "Europe/Paris", "America/Sao_Paulo"])
def test_the_cover_is_the_day_by_day_planners(zone: str) -> None:
    tz = ZoneInfo(zone)
    rng = random.Random(zone)
    for _ in range(150):
        start = date(2017, 1, 1) + timedelta(days=rng.randrange(3000))
        days = [Day.of(start, tz)]
        for _ in range(rng.randrange(120)):
            days.append(days[-1].shift(1))  # type: ignore[arg-type]
        kept = rng.choice(KEPT)
        cutoff = days[0].start_ts + rng.randrange(len(days) + 1) * 86400
        kinds = {rng.choice(PERIOD_NAMES) for _ in range(2)}

        def usable(period: Period, cutoff: float = cutoff, kinds: set[str] = kinds) -> bool:
            return period.name not in kinds or period.start_ts >= cutoff

        for check in (None, usable):
            expected = reference(days, kept, check or (lambda period: True))
            if expected is None:
                with pytest.raises(NoDayKeys, match="'m' keeps no day keys"):
                    cover_days(days, kept, "'m'", check)
            else:
                assert cover_days(days, kept, "'m'", check) == expected
    assert cover.cache_info().hits + cover.cache_info().misses > 0
