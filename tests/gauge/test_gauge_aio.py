"""Gauge's async twins against its sync methods, on a single node and on a cluster."""

from __future__ import annotations

import math
import time
from decimal import Decimal
from typing import Any

import pytest

from django_redis_metrics import Gauge
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.core.scripts import MetricsRefused

from ..asyncio_helpers import AsyncRoundTrips, clockless, raised, run
from ..conftest import Backend
from ..roundtrips import RoundTrips

T0 = 1_700_000_040  # a multiple of 60
#: Arrivals out of time order: backfills must not hide the latest value.
SETS: list[tuple[float, Any]] = [
    (T0 + 5, 10),
    (T0 + 50, 3),
    (T0 + 20, 40),
    (T0 + 61, 7),
    (T0 + 5.5, Decimal("1.5")),
    (T0 + 61, -2),
    (T0 + 30, 99),
]


def test_async_sets_read_back_like_sync_sets(backend: Backend, round_trips: RoundTrips) -> None:
    sync = Gauge("sync", precisions=[1, 60], samples=100)
    both = Gauge("async", precisions=[1, 60], samples=100)
    for when, value in SETS:
        sync.set(value, when)

    async def main() -> Any:
        empty = (await both.aget(), await both.alatest(), await both.aseries(60))
        for when, value in SETS:
            await both.aset(value, when)
        read = (await both.aget(), await both.alatest(), await both.aseries(60))
        return empty, read, await both.aseries(1), await both.aexists()

    before = round_trips.calls
    empty, (value, latest, minutes), seconds, exists = run(main)
    assert round_trips.calls == before  # the sync client, which would block the loop, unused
    assert empty == (None, None, [])
    assert (value, latest) == (sync.get(), sync.latest()) == (-2, (T0 + 61, -2))
    assert minutes == sync.series(60) == both.series(60)
    assert minutes[0] == (T0, {"last": 3, "min": 1.5, "max": 99})
    assert seconds == sync.series(1) and len(seconds) == 5
    assert exists
    assert both in Gauge.objects.all()  # listed on the cluster too, by the async follow-up


def test_a_set_is_one_round_trip(backend: Backend, monkeypatch: pytest.MonkeyPatch) -> None:
    gauge = Gauge("trips", precisions=[1, 60, 3600])
    trips = AsyncRoundTrips(monkeypatch)

    async def main() -> list[int]:
        await gauge.aset(1)  # connects, loads the script, lists the gauge on a cluster
        return [await trips.measure(lambda: gauge.aset(2)), await trips.measure(gauge.aget)]

    assert run(main) == [1, 1]
    assert gauge.get() == 2


def test_a_time_ahead_of_the_redis_clock_is_refused_alike(backend: Backend) -> None:
    gauge = Gauge("ahead", precisions=[1, 60])
    gauge.set(1)
    before = {key: backend.client.dump(key) for key in backend.keys()}
    ahead = time.time() + MAX_AHEAD + 30
    expected = raised(lambda: gauge.set(2, ahead))
    assert expected[0] is MetricsRefused and "ahead of the Redis server clock" in expected[1]
    assert clockless(raised(lambda: gauge.aset(2, ahead))) == clockless(expected)
    assert {key: backend.client.dump(key) for key in backend.keys()} == before


BAD: list[tuple[str, tuple[Any, ...]]] = [
    ("set", (True,)),
    ("set", ("3",)),
    ("set", ([1],)),
    ("set", (math.inf,)),
    ("set", (Decimal("-Infinity"),)),
    ("set", (2**60,)),
    ("set", (1, "yesterday")),
    ("series", (61,)),
    ("series", ("60",)),
]


@pytest.mark.parametrize(("method", "args"), BAD, ids=[f"{m}{a}"[:40] for m, a in BAD])
def test_bad_input_raises_the_sync_error_and_writes_nothing(
    backend: Backend, method: str, args: tuple[Any, ...]
) -> None:
    gauge = Gauge("bad", precisions=[1, 60])
    expected = raised(lambda: getattr(gauge, method)(*args))
    assert raised(lambda: getattr(gauge, "a" + method)(*args)) == expected
    assert backend.keys() == []
