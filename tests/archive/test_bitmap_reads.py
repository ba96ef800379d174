"""Bitmap reads across the Redis/archive boundary equal a plain Python model of the marks:
history, count, ranges and retention tables over weeks and months Redis has forgotten."""

from __future__ import annotations

import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from django_redis_metrics import UniqueBitmap
from django_redis_metrics.archive.passes import archive_all
from django_redis_metrics.bitmaps.cleaner import clean_bitmaps
from django_redis_metrics.core.periods import Day, Month, Period, Week, period_class

from ..asyncio_helpers import run
from ..clock import moment
from .conftest import ARCHIVE_DATABASES
from .sets_model import DAY, by_period, marks

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES)
ZONE = "America/New_York"
#: What Redis keeps once the test has archived: the current week's days, two weeks, one month.
FORGETFUL = {"hour": 48, "day": 8, "week": 2, "month": 1}


@pytest.fixture(autouse=True)
def zone(backend: Any, metrics_settings: Any, archive_db: str) -> None:
    metrics_settings(TIME_ZONE=ZONE, ARCHIVE_DATABASE=archive_db)


def archived_then_forgotten(metrics_settings: Any, now: float, *, clean: bool = True) -> None:
    """Archive as of ``now``, then have Redis keep only ``FORGETFUL`` (and clean it: reads
    take what the retention no longer keeps from the archive, cleaned or not)."""
    archive_all(now=now, kinds=["bitmap"])
    metrics_settings(BITMAP_RETENTION=FORGETFUL)
    if clean:
        clean_bitmaps(now=now)


def every_period(sets: dict[Period, set[int]], name: str, start: float, now: float) -> list[Any]:
    """What ``history(name, start, now)`` answers: each period from ``start``'s to ``now``'s,
    with how many ids it holds, 0 for one without marks (the period holding ``start`` has
    marks only in the hours after ``start``: at some hours of some weekdays, none)."""
    kind = period_class(name)
    period, last = kind.containing(start, ZONE), kind.containing(now, ZONE)
    found = []
    while period.start_ts <= last.start_ts:
        found.append((int(period.start_ts), len(sets.get(period, ()))))
        period = period.shift(1)
    return found


def union(sets: dict[Period, set[int]], first: Period, last: Period) -> set[int]:
    return set().union(
        *(users for p, users in sets.items() if first.start_ts <= p.start_ts <= last.start_ts)
    )


def test_history_and_counts_span_redis_and_the_archive(metrics_settings: Any) -> None:
    now = time.time()
    pairs = marks(now, 85, seed=2)
    active = UniqueBitmap("active")
    active.mark_many(pairs)
    archived_then_forgotten(metrics_settings, now)
    days = by_period(pairs, "day", ZONE)
    start = now - 85 * DAY
    for name in ("day", "week", "month"):
        sets = by_period(pairs, name, ZONE)
        assert active.history(name, start, now) == every_period(sets, name, start, now)
    old = Week.containing(now - 40 * DAY, ZONE)
    assert active.count("week", moment(old, 3600, now=now)) == len(
        by_period(pairs, "week", ZONE)[old]
    )
    old_day = Day.containing(now - 30 * DAY, ZONE)
    assert active.count("day", old_day.start_ts) == len(days.get(old_day, ()))
    assert active.count("day", now) == len(days.get(Day.containing(now, ZONE), ()))


def test_ranges_and_cohorts_over_archived_weeks_equal_the_set_unions(
    metrics_settings: Any,
) -> None:
    now = time.time()
    pairs = marks(now, 85, seed=3)
    active = UniqueBitmap("active")
    active.mark_many(pairs)
    archived_then_forgotten(metrics_settings, now)
    weeks = by_period(pairs, "week", ZONE)
    this_week = Week.containing(now, ZONE)
    first, last = this_week.shift(-10), this_week.shift(-3)
    assert active.between(first.start_ts, last.end_ts - 1).count() == len(union(weeks, first, last))
    # Archived weeks, the two weeks Redis keeps, and this week's days: one query.
    mixed = active.between(first.start_ts, now)
    assert mixed.count() == len(union(weeks, first, this_week))
    month = Month.containing(now, ZONE).shift(-2)
    months = by_period(pairs, "month", ZONE)
    assert active.between(month.start_ts, month.end_ts - 1).count() == len(months.get(month, ()))

    table = active.cohort("week", moment(first, 0, now=now), periods=8)
    chosen = [first.shift(i) for i in range(8)]
    assert table == [
        [
            len(weeks.get(p, set())),
            *(len(weeks.get(p, set()) & weeks.get(q, set())) for q in chosen[i + 1 :]),
        ]
        for i, p in enumerate(chosen)
    ]
    assert not [key for key in _keys(active) if ":archived:" in key]  # the stand-ins are gone


def _keys(bitmap: UniqueBitmap) -> list[str]:
    from django_redis_metrics.core.connection import get_redis_connection

    client = get_redis_connection()
    return [k.decode() for k in client.scan_iter(match=f"*{{{bitmap.name}}}*", count=1000)]


def test_a_labelled_bitmap_read_whole_unites_its_archived_series(metrics_settings: Any) -> None:
    now = time.time()
    pairs = marks(now, 60, seed=4)
    plans = UniqueBitmap("plans", labels=("plan",))
    pro, free = pairs[::2], pairs[1::2]
    plans.labels(plan="pro").mark_many(pro)
    plans.labels(plan="free").mark_many(free)
    archived_then_forgotten(metrics_settings, now, clean=False)  # the cleaner fails on series
    start = now - 60 * DAY
    weeks = by_period(pairs, "week", ZONE)
    assert plans.history("week", start, now) == every_period(weeks, "week", start, now)
    pro_days = by_period(pro, "day", ZONE)
    # The oldest day with marks in both series (which days those are depends on the hour).
    old_day = min(set(pro_days) & set(by_period(free, "day", ZONE)))
    assert plans.labels(plan="pro").count("day", old_day.start_ts) == len(pro_days[old_day])
    with pytest.raises(ValueError, match="count one series"):
        plans.count("day", old_day.start_ts)
    old = Week.containing(now - 30 * DAY, ZONE)
    assert plans.between(old.start_ts, old.end_ts - 1).count() == len(weeks[old])


@pytest.mark.django_db(databases=ARCHIVE_DATABASES, transaction=True)
def test_the_async_twins_read_the_archive_too(metrics_settings: Any) -> None:
    now = time.time()
    pairs = marks(now, 50, seed=5)
    active = UniqueBitmap("active")
    active.mark_many(pairs)
    archived_then_forgotten(metrics_settings, now)
    weeks = by_period(pairs, "week", ZONE)
    old = Week.containing(now - 30 * DAY, ZONE)
    start = now - 50 * DAY

    async def main() -> tuple[int, list[tuple[int, int]], int]:
        try:
            return (
                await active.acount("week", moment(old, 0, now=now)),
                await active.ahistory("week", start, now),
                await active.between(old.start_ts, old.end_ts - 1).acount(),
            )
        finally:  # the database connections of sync_to_async's thread
            await sync_to_async(connections.close_all)()

    count, history, ranged = run(main)
    assert count == ranged == len(weeks[old])
    assert history == every_period(weeks, "week", start, now)


def test_a_history_refuses_what_it_cannot_read() -> None:
    active = UniqueBitmap("active", periods=("day", "week"))
    with pytest.raises(ValueError, match="keeps no month periods"):
        active.history("month", 0, 86400)
    with pytest.raises(ValueError, match="at most 2,000 periods"):
        active.history("day", 0, 3000 * DAY)
    with pytest.raises(ValueError, match="must not be before"):
        active.history("day", 2 * DAY, DAY)
    with pytest.raises(TypeError, match="period name"):
        active.history(7, 0, DAY)  # type: ignore[arg-type]
