"""Statistic's async twins against its sync methods, on a single node and on a cluster."""

from __future__ import annotations

import asyncio
import math
import random
from decimal import Decimal
from typing import Any

import pytest

from django_redis_metrics import Statistic
from django_redis_metrics.core.keys import catalogue_key

from ..asyncio_helpers import AsyncRoundTrips, raised, run
from ..conftest import Backend
from ..roundtrips import RoundTrips, nodes_of

T0 = 1_700_000_040  # a multiple of 60


def test_async_records_read_back_like_sync_records(
    backend: Backend, round_trips: RoundTrips
) -> None:
    sync = Statistic("sync", precisions=[60, 3600], samples=100)
    both = Statistic("async", precisions=[60, 3600], samples=100)
    rng = random.Random(13)
    records: list[tuple[Any, float]] = [
        (rng.choice([rng.lognormvariate(3, 1), rng.randint(-5, 500), Decimal("12.25")]), when)
        for when in (T0 + rng.uniform(0, 600) for _ in range(200))
    ]
    for value, when in records:
        sync.record(value, when)

    async def main() -> Any:
        for value, when in records:
            await both.arecord(value, when)
        return (
            await both.aseries(60),
            await both.asummary(3600, T0),
            await both.asummary(60, T0 + 7200),  # an empty slice
            [await both.apercentile(60, q, T0 + 120) for q in (0.01, 0.5, 0.9, 1)],
            await both.arecent(60, 15, until=T0 + 660),
            await both.atotals(),
            await both.aexists(),
        )

    before = round_trips.calls
    series, hour, empty, quantiles, recent, totals, exists = run(main)
    assert round_trips.calls == before  # the sync client, which would block the loop, unused
    assert series == sync.series(60) == both.series(60)
    assert len(series) == 10
    assert hour == sync.summary(3600, T0) and hour["count"] == 200
    assert empty == sync.summary(60, T0 + 7200) and empty["count"] == 0
    assert quantiles == [sync.percentile(60, q, T0 + 120) for q in (0.01, 0.5, 0.9, 1)]
    assert None not in quantiles
    assert recent == sync.recent(60, 15, until=T0 + 660)
    assert totals == sync.totals() and totals["count"] == 200
    assert math.isclose(totals["sum"], float(sum(Decimal(str(v)) for v, _ in records)))
    assert exists
    assert both in Statistic.objects.all()  # listed on the cluster too, by the async follow-up


def test_atime_records_the_block_even_when_it_raises_or_is_cancelled(backend: Backend) -> None:
    stat = Statistic("timed", precisions=[60], samples=10)

    async def timed_forever() -> None:
        async with stat.atime():
            await asyncio.sleep(60)

    async def main() -> None:
        async with stat.atime():
            await asyncio.sleep(0.05)
        with pytest.raises(KeyError):
            async with stat.atime():
                await asyncio.sleep(0.02)
                raise KeyError("boom")
        task = asyncio.create_task(timed_forever())
        await asyncio.sleep(0.03)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main)
    slices = [summary for _, summary in stat.series(60)]  # two if the minute turned between
    assert sum(summary["count"] for summary in slices) == 3
    assert 20 <= min(summary["min"] for summary in slices) < 1000
    assert 50 <= max(summary["max"] for summary in slices) < 1000


def test_a_record_is_one_round_trip_and_a_summary_one_read(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    stat = Statistic("trips", precisions=[60, 300, 3600, 86400])
    trips = AsyncRoundTrips(monkeypatch)

    async def main() -> list[int]:
        await stat.arecord(1)  # connects, loads the script, lists the statistic on a cluster
        return [
            await trips.measure(lambda: stat.arecord(2.5)),
            await trips.measure(lambda: stat.asummary(3600)),
            await trips.measure(lambda: stat.arecent(60, 20)),
            await trips.measure(stat.atotals),
        ]

    # A read lists the statistic's series in the same round: on a cluster, on the catalogue's
    # node, one more packet sent alongside.
    reads = nodes_of(backend.client, stat.meta_key, catalogue_key("statistic"))
    assert run(main) == [1, reads, reads, reads]
    assert stat.totals() == {"count": 2, "sum": 3.5}


BAD: list[tuple[str, tuple[Any, ...]]] = [
    ("record", (True,)),
    ("record", ("12",)),
    ("record", (math.nan,)),
    ("record", (Decimal("1e400"),)),
    ("record", (2**53 + 2,)),
    ("record", (1, "now")),
    ("summary", (5,)),
    ("summary", (60, "now")),
    ("percentile", (60, 1.5)),
    ("percentile", (60, "0.5")),
    ("percentile", (61, 0.5)),
    ("series", (61,)),
    ("recent", (60, 0)),
    ("recent", (60, 10**6)),
    ("recent", (60, 5, "later")),
]


@pytest.mark.parametrize(("method", "args"), BAD, ids=[f"{m}{a}"[:40] for m, a in BAD])
def test_bad_input_raises_the_sync_error_and_writes_nothing(
    backend: Backend, method: str, args: tuple[Any, ...]
) -> None:
    stat = Statistic("bad", precisions=[60], samples=10)
    expected = raised(lambda: getattr(stat, method)(*args))
    assert raised(lambda: getattr(stat, "a" + method)(*args)) == expected
    assert backend.keys() == []


def test_a_key_of_another_type_is_the_same_error(backend: Backend) -> None:
    stat = Statistic("clash", precisions=[60])
    backend.client.set(stat.key(60), "not a hash")
    pairs = [
        (lambda: stat.record(1, T0), lambda: stat.arecord(1, T0)),
        (lambda: stat.series(60), lambda: stat.aseries(60)),
        (lambda: stat.summary(60, T0), lambda: stat.asummary(60, T0)),
    ]
    for sync, twin in pairs:
        expected = raised(sync)
        assert "WRONGTYPE" in expected[1]
        assert raised(twin)[0] is expected[0]
    assert backend.keys() == [stat.key(60)]
