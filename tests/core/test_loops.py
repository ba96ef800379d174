"""The async client: one per event loop, never blocking its loop, built from the settings."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import redis.asyncio
from redis.cluster import RedisCluster

from django_redis_metrics import (
    Counter,
    EventSeries,
    Gauge,
    Statistic,
    UniqueBitmap,
    UniqueEstimate,
)
from django_redis_metrics.core import aio
from django_redis_metrics.core.aio import aclose_connections, get_async_connection

from ..asyncio_helpers import raised, run
from ..conftest import Backend

T0 = 1_700_000_000
PAUSE_MS = 1000
TICK = 0.005


def pause(backend: Backend, ms: int) -> None:
    """Make Redis hold every client's commands for ``ms`` (every node of a cluster), from a
    connection other than the async client's."""
    if backend.cluster:
        backend.client.execute_command(
            "CLIENT PAUSE", ms, "ALL", target_nodes=RedisCluster.ALL_NODES
        )
    else:
        backend.client.execute_command("CLIENT PAUSE", ms, "ALL")


def test_awaits_on_a_paused_redis_never_block_the_loop(backend: Backend) -> None:
    counter, series = Counter("slow", precisions=[60]), EventSeries("slow")
    bitmap = UniqueBitmap("slow", periods=("day",))
    stat, gauge = Statistic("slow", precisions=[60]), Gauge("slow", precisions=[60])
    estimate = UniqueEstimate("slow", periods=("day",))

    async def main() -> tuple[float, float, int]:
        loop = asyncio.get_running_loop()
        await counter.aincr(when=T0)  # connected (and scripts loaded) before Redis pauses
        gaps: list[float] = []
        done = asyncio.Event()

        async def ticker() -> None:
            last = loop.time()
            while not done.is_set():
                await asyncio.sleep(TICK)
                now = loop.time()
                gaps.append(now - last)
                last = now

        ticking = asyncio.create_task(ticker())
        await asyncio.sleep(0.05)
        pause(backend, PAUSE_MS)
        started = loop.time()
        await asyncio.gather(
            *(counter.aincr(when=T0) for _ in range(20)),
            *(series.arecord(T0, n=n) for n in range(5)),
            counter.arecent(60, 5, until=T0),
            series.acounts(T0 - 600, T0, 60),
            bitmap.amark(3),
            bitmap.last(7).acount(),
            stat.arecord(12.5, T0),
            stat.asummary(60, T0),
            gauge.aset(4, T0),
            gauge.aget(),
            estimate.aadd("visitor"),
            estimate.last(7).acount(),
        )
        elapsed = loop.time() - started
        done.set()
        await ticking
        return elapsed, max(gaps), len(gaps)

    elapsed, longest_gap, ticks = run(main)
    assert elapsed >= PAUSE_MS / 1000 * 0.8  # the awaits really waited for Redis ...
    # ... while the loop went on ticking: a blocked loop would stall for the whole pause; a
    # busy machine (coverage tracing, a CI run beside other jobs) may stall it a few tenths.
    assert longest_gap < PAUSE_MS / 1000 * 0.6
    assert ticks >= elapsed / 0.05
    assert counter.total(60) == 21 and series.size() == 5 and bitmap.count("day") == 1
    assert stat.summary(60, T0)["count"] == 1 and gauge.get() == 4
    assert estimate.count("day") == 1


def test_one_client_per_loop_reused_within_it(single: Backend) -> None:
    async def clients() -> tuple[Any, Any]:
        first = get_async_connection()
        await Counter("c").aincr()
        return first, get_async_connection()

    loop_a, loop_b = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        a1, a2 = loop_a.run_until_complete(clients())
        b1, b2 = loop_b.run_until_complete(clients())
        assert a1 is a2 and b1 is b2 and a1 is not b1
        assert isinstance(a1, redis.asyncio.Redis)
        a3, _ = loop_a.run_until_complete(clients())
        assert a3 is a1
        loop_a.run_until_complete(aclose_connections())
    finally:
        loop_a.close()
    try:
        b3, _ = loop_b.run_until_complete(clients())
        assert b3 is b1
        assert loop_a not in aio._clients  # a closed loop's clients are retired
        loop_b.run_until_complete(aclose_connections())
    finally:
        loop_b.close()
    assert Counter("c").total() == 4


def test_loops_in_threads_write_concurrently(backend: Backend) -> None:
    counter = Counter("threads", precisions=[60])
    seen: list[Any] = []

    def worker() -> None:
        async def main() -> None:
            seen.append(get_async_connection())
            for _ in range(20):
                await counter.aincr(when=T0)

        run(main)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(client) for client in seen}) == 4
    assert counter.total(60) == 80


def test_settings_choose_the_client(settings: Any, redis_server: Any) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "metrics": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": redis_server.url.rsplit("/", 1)[0] + "/3",
        },
    }
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": "metrics",
        "PREFIX": "aio-alias",
        "SOCKET_TIMEOUT": 0.75,
    }
    counter = Counter("alias", precisions=[60])

    async def main() -> dict[str, Any]:
        await counter.aincr(when=T0)
        client = get_async_connection()
        assert isinstance(client, redis.asyncio.Redis)
        return dict(client.connection_pool.connection_kwargs)

    try:
        kwargs = run(main)
        assert (kwargs["db"], kwargs["socket_timeout"]) == (3, 0.75)
        assert counter.series(60) == [(T0 - T0 % 60, 1)]  # the sync client on the same alias
    finally:
        counter.delete()


def test_scripts_flushed_from_redis_are_loaded_again(backend: Backend) -> None:
    counter, series = Counter("flushed", precisions=[60]), EventSeries("flushed")
    counter.incr(when=T0)
    flush = {"target_nodes": RedisCluster.ALL_NODES} if backend.cluster else {}
    backend.client.execute_command("SCRIPT FLUSH", **flush)

    async def main() -> tuple[int, list[int]]:
        calls = await counter.aincr_many([(T0 + 60 * i, 1) for i in range(3)])
        return calls, await series.arecord_many([{"n": 1}, {"n": 2}])

    counter.MAX_PAIRS_PER_CALL = 1  # type: ignore[misc]  # several calls: the pipelined path
    assert run(main) == (3, [1, 2])
    backend.client.execute_command("SCRIPT FLUSH", **flush)
    run(lambda: counter.aincr(when=T0))  # one call: EVALSHA, then EVAL
    assert counter.total(60) == 5


def test_an_unreachable_redis_is_the_same_error(settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": "redis://127.0.0.1:1/0",
        "SOCKET_CONNECT_TIMEOUT": 0.5,
    }
    counter = Counter("nowhere")
    expected = raised(lambda: counter.incr())
    assert raised(lambda: counter.aincr())[0] is expected[0]
