"""UniqueEstimate's async twins and its queries' ``acount`` against the sync ones, on a single
node and on a cluster."""

from __future__ import annotations

import time
import uuid
from datetime import date
from typing import Any

import pytest

from django_redis_metrics import UniqueEstimate
from django_redis_metrics.core.keys import catalogue_key
from django_redis_metrics.core.periods import Day, Month
from django_redis_metrics.core.scripts import MetricsRefused
from django_redis_metrics.estimates.query import MAX_COUNT_KEYS

from ..asyncio_helpers import AsyncRounds, AsyncRoundTrips, raised, run
from ..clock import moment
from ..conftest import Backend
from ..roundtrips import RoundTrips, nodes_of

DAYS = 90  # more day keys than one PFCOUNT reads: the range is merged in bounded steps


@pytest.mark.django_db  # periods Redis no longer holds: the archive
def test_async_adds_count_like_sync_adds(backend: Backend, round_trips: RoundTrips) -> None:
    now = time.time()
    today = Day.containing(now)
    user = uuid.UUID("12345678-1234-5678-1234-567812345678")
    adds: list[tuple[object, float]] = [
        (item, moment(today.shift(-(n % DAYS)), 3600, now=now))
        for n, item in enumerate([*range(300), *(f"s-{n}" for n in range(200)), user, str(user)])
    ]
    sync = UniqueEstimate("sync", periods=("day", "week", "month"))
    both = UniqueEstimate("async", periods=("day", "week", "month"))
    daily_sync, daily = UniqueEstimate("sync-daily", ("day",)), UniqueEstimate("daily", ("day",))
    for item, when in adds:
        sync.add(item, when)
        daily_sync.add(item, when)

    async def main() -> Any:
        for item, when in adds:
            await both.aadd(item, when)
            await daily.aadd(item, when)
        return (
            [await both.acount(p) for p in ("day", "week", "month")],
            [await daily.acount("day", today.shift(-n).start_ts) for n in range(0, DAYS, 9)],
            await both.acount(Month.containing(today.shift(-40).start_ts)),
            await both.last(30).acount(),
            await both.between(today.shift(-60).start_ts, today.shift(-3).start_ts).acount(),
            await daily.last(DAYS).acount(),
            await daily.between(date(2000, 1, 1), date(2000, 1, 2)).acount(),  # past retention
            await both.aexists(),
        )

    before = round_trips.calls
    counts, days, month, last_30, span, long, nothing, exists = run(main)
    assert round_trips.calls == before  # the sync client, which would block the loop, unused
    assert counts == [sync.count(p) for p in ("day", "week", "month")]
    assert days == [daily_sync.count("day", today.shift(-n).start_ts) for n in range(0, 90, 9)]
    assert month == sync.count(Month.containing(today.shift(-40).start_ts)) > 0
    assert last_30 == sync.last(30).count() == both.last(30).count() > 0
    assert span == sync.between(today.shift(-60).start_ts, today.shift(-3).start_ts).count() > 0
    assert len(daily.last(DAYS).keys) == DAYS > MAX_COUNT_KEYS
    assert long == daily_sync.last(DAYS).count() == daily.last(DAYS).count() > 500
    assert nothing == 0 and not daily.between(date(2000, 1, 1), date(2000, 1, 2)).periods
    assert not [key for key in backend.keys() if ":tmp:" in key]  # the temporary union is gone
    assert exists
    assert {both, daily} <= set(UniqueEstimate.objects.all())  # listed by the async follow-up


def test_an_add_is_one_round_trip(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    visitors = UniqueEstimate("trips", periods=("hour", "day", "week", "month"))
    trips = AsyncRoundTrips(monkeypatch)
    rounds = AsyncRounds(monkeypatch)

    async def main() -> list[int]:
        await visitors.aadd("first")  # connects, loads the script, lists it on a cluster
        return [
            await trips.measure(lambda: visitors.aadd("second")),
            # A count lists the estimate's series in its own round trip: on Redis Cluster
            # the catalogue's node may be another, asked at once (one more packet).
            await rounds.measure(lambda: visitors.acount("hour")),
            await rounds.measure(visitors.last(40).acount),
            await trips.measure(lambda: visitors.acount("hour")),
        ]

    nodes = nodes_of(backend.client, catalogue_key("estimate"), visitors.meta_key)
    assert run(main) == [1, 1, 1, nodes]
    assert visitors.count("day") == 2


def test_a_refused_write_is_the_same_error_with_nothing_written(backend: Backend) -> None:
    visitors = UniqueEstimate("visitors")
    now = time.time()
    visitors.add(1, now)
    backend.client.delete(visitors.key(Month.containing(now)))
    backend.client.set(visitors.key(Month.containing(now)), "not an HLL")
    before = {key: backend.client.dump(key) for key in backend.keys()}
    expected = raised(lambda: visitors.add(2, now))
    assert expected[0] is MetricsRefused and "not a HyperLogLog" in expected[1]
    assert raised(lambda: visitors.aadd(2, now)) == expected
    assert {key: backend.client.dump(key) for key in backend.keys()} == before


BAD: list[tuple[str, tuple[Any, ...]]] = [
    ("add", (True,)),
    ("add", (1.5,)),
    ("add", (None,)),
    ("add", (b"bytes",)),
    ("add", ("",)),
    ("add", (2**64,)),
    ("add", (object(),)),
    ("add", (1, "yesterday")),
    ("count", ("year",)),
    ("count", ("hour",)),
    ("count", ("day", "today")),
]


@pytest.mark.parametrize(("method", "args"), BAD, ids=[f"{m}{a}"[:40] for m, a in BAD])
def test_bad_input_raises_the_sync_error_and_writes_nothing(
    backend: Backend, method: str, args: tuple[Any, ...]
) -> None:
    visitors = UniqueEstimate("bad", periods=("day", "week"))
    expected = raised(lambda: getattr(visitors, method)(*args))
    assert raised(lambda: getattr(visitors, "a" + method)(*args)) == expected
    assert backend.keys() == []
