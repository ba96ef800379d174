"""Counter's async twins against its sync methods, on a single node and on a cluster."""

from __future__ import annotations

from typing import Any

import pytest

from django_redis_metrics import Counter

from ..asyncio_helpers import raised, run
from ..conftest import Backend

T0 = 1_700_000_000


def test_async_writes_read_back_like_sync_writes(backend: Backend) -> None:
    sync, both = Counter("sync", precisions=[60, 3600]), Counter("async", precisions=[60, 3600])
    increments = [(T0 + 7 * i, i % 5 - 1) for i in range(300)]
    sync.incr(3, T0)
    sync.incr_many(increments)

    async def main() -> Any:
        await both.aincr(3, T0)
        calls = await both.aincr_many(increments)
        return (
            calls,
            await both.aseries(60),
            await both.arecent(3600, 3, until=T0 + 3600),
            await both.atotal(),
            await both.atotal(60),
            await both.aexists(),
        )

    calls, series, recent, total, total_60, exists = run(main)
    assert calls == 1
    assert series == sync.series(60) == both.series(60)
    assert recent == sync.recent(3600, 3, until=T0 + 3600)
    assert (total, total_60) == (sync.total(), sync.total(60)) != (0, 0)
    assert exists
    assert both in Counter.objects.all()  # listed on the cluster too, by the async follow-up


def test_many_calls_split_like_sync(backend: Backend) -> None:
    counter = Counter("split", precisions=[1])
    counter.MAX_PAIRS_PER_CALL = 7
    increments = [(T0 + i, 1) for i in range(50)]
    assert run(lambda: counter.aincr_many(increments)) == 8
    assert counter.total(1) == 50


BAD: list[tuple[str, tuple[Any, ...]]] = [
    ("incr", ("2",)),
    ("incr", (2**60,)),
    ("incr", (1, "yesterday")),
    ("incr_many", ([(T0, 1), (T0, "x")],)),
    ("incr_many", ([(T0, 2**53), (T0, 1)],)),
    ("incr_many", ([T0],)),
    ("series", (61,)),
    ("recent", (60, 0)),
    ("recent", (60, 10**9)),
]


@pytest.mark.parametrize(("method", "args"), BAD, ids=[f"{m}{a}"[:40] for m, a in BAD])
def test_bad_input_raises_the_sync_error_and_writes_nothing(
    backend: Backend, method: str, args: tuple[Any, ...]
) -> None:
    counter = Counter("bad", precisions=[60])
    expected = raised(lambda: getattr(counter, method)(*args))
    assert raised(lambda: getattr(counter, "a" + method)(*args)) == expected
    assert backend.keys() == []


def test_a_key_of_another_type_is_the_same_error(backend: Backend) -> None:
    counter = Counter("clash", precisions=[60])
    backend.client.set(counter.key(60), "not a hash")
    many = [(T0, 1), (T0 + 60, 1)]
    pairs = [
        (lambda: counter.incr(when=T0), lambda: counter.aincr(when=T0)),
        (lambda: counter.incr_many(many), lambda: counter.aincr_many(many)),  # one call
        (lambda: counter.series(60), lambda: counter.aseries(60)),
    ]
    for sync, twin in pairs:
        expected = raised(sync)
        assert "WRONGTYPE" in expected[1]
        assert raised(twin)[0] is expected[0]
