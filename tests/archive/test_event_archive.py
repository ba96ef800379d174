"""Event series' archive: each closed day's count and per-value breakdown, read back by
history() and count_by() across the Redis/archive boundary as a plain list of events says;
a pass run twice, or killed midway and run again, writes exact counts."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from django_redis_metrics import EventSeries
from django_redis_metrics.archive.passes import archive_all
from django_redis_metrics.core.periods import Day, days_between
from django_redis_metrics.events import archive as events_archive
from django_redis_metrics.events.archive import MAX_BREAKDOWN_VALUES, OTHER_BREAKDOWN, capped
from django_redis_metrics.models import ArchiveCursor, ArchivedBreakdown, ArchivedPeriod

from ..asyncio_helpers import run
from .conftest import ARCHIVE_DATABASES
from .sets_model import DAY

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES)
ZONE = "Pacific/Auckland"
TYPES = ("purchase", "refund", "visit")


@pytest.fixture(autouse=True)
def zone(backend: Any, metrics_settings: Any, archive_db: str) -> None:
    metrics_settings(TIME_ZONE=ZONE, ARCHIVE_DATABASE=archive_db)


def recorded(series: EventSeries, now: float, seed: int) -> list[tuple[float, str]]:
    """Events over the 25 days before ``now`` (never ahead of it), recorded and returned."""
    rng = random.Random(seed)
    events = sorted(
        (min(now - rng.uniform(0, 25 * DAY), now), rng.choice(TYPES)) for _ in range(400)
    )
    series.record_many([{"when": when, "type": kind} for when, kind in events])
    return events


def snapshot(alias: str) -> tuple[list[Any], list[Any]]:
    periods = ArchivedPeriod.objects.using(alias).filter(kind="events")
    breakdowns = ArchivedBreakdown.objects.using(alias)
    return (
        sorted(periods.values_list("series", "start", "count")),
        sorted(breakdowns.values_list("series", "field", "value", "start", "count")),
    )


def test_history_and_count_by_span_redis_and_the_archive(metrics_settings: Any) -> None:
    now = time.time()
    orders = EventSeries("orders", index=["type"])
    events = recorded(orders, now, seed=9)
    archive_all(now=now, kinds=["events"])
    metrics_settings(EVENT_RETENTION=5 * DAY)
    orders.preen(now)  # Redis forgets all but the last 5 days
    assert orders.count(now - 25 * DAY, now) < len(events)
    start = now - 25 * DAY
    expected = [
        (int(d.start_ts), sum(d.start_ts <= when < d.end_ts for when, _ in events))
        for d in days_between(start, now, ZONE)
    ]
    assert orders.history(start, now) == expected
    lo = now - 12 * DAY
    first = Day.containing(lo, ZONE).start_ts  # archived days count whole
    by_type: dict[str, int] = {}
    for when, kind in events:
        if first <= when <= now:
            by_type[kind] = by_type.get(kind, 0) + 1
    assert orders.count_by("type", lo, now) == by_type


def test_a_pass_twice_or_killed_midway_writes_exact_counts(
    metrics_settings: Any, archive_db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    metrics_settings(ARCHIVE_BATCH=1)
    for name, seed in (("a", 1), ("b", 2), ("c", 3)):
        recorded(EventSeries(name, index=["type"]), now, seed)
    real = events_archive.upsert_breakdowns
    calls: list[int] = []

    def dying(rows: Any, using: str) -> int:
        calls.append(len(rows))
        if len(calls) == 2:
            raise RuntimeError("killed")
        return real(rows, using)

    monkeypatch.setattr(events_archive, "upsert_breakdowns", dying)
    with pytest.raises(RuntimeError, match="killed"):
        archive_all(now=now, kinds=["events"])
    assert not ArchiveCursor.objects.using(archive_db).filter(kind="events").exists()
    monkeypatch.setattr(events_archive, "upsert_breakdowns", real)
    archive_all(now=now, kinds=["events"])
    first = snapshot(archive_db)
    archive_all(now=now, kinds=["events"])
    assert snapshot(archive_db) == first
    days, breakdowns = first
    assert {series for series, *_ in days} == {"a", "b", "c"}
    for series, start, count in days:
        assert count == sum(c for s, _f, _v, st, c in breakdowns if (s, st) == (series, start))


def test_a_days_breakdown_keeps_the_biggest_values_and_sums_the_rest() -> None:
    counts = {f"v{i}": i + 1 for i in range(MAX_BREAKDOWN_VALUES + 5)}
    kept = capped(counts)
    assert len(kept) == MAX_BREAKDOWN_VALUES + 1
    assert kept[OTHER_BREAKDOWN] == sum(range(1, 6))  # the five smallest
    assert sum(kept.values()) == sum(counts.values())
    assert capped({"a": 1}) == {"a": 1}


@pytest.mark.django_db(databases=ARCHIVE_DATABASES, transaction=True)
def test_the_async_twins_read_the_archive(metrics_settings: Any) -> None:
    now = time.time()
    orders = EventSeries("orders", index=["type"])
    events = recorded(orders, now, seed=11)
    start = now - 25 * DAY
    before = (orders.history(start, now), orders.count_by("type", start, now))
    archive_all(now=now, kinds=["events"])
    metrics_settings(EVENT_RETENTION=3 * DAY)

    async def main() -> Any:
        try:
            first = Day.containing(start, ZONE).start_ts
            return (
                await orders.ahistory(first, now),
                await orders.acount_by("type", first, now),
            )
        finally:
            await sync_to_async(connections.close_all)()

    assert run(main) == before
    assert sum(before[1].values()) == len(events)


def test_a_history_is_bounded() -> None:
    orders = EventSeries("orders")
    with pytest.raises(ValueError, match="at most 2,000 days"):
        orders.history(0, 3000 * DAY)
    with pytest.raises(ValueError, match="must not be after"):
        orders.history(2 * DAY, DAY)
