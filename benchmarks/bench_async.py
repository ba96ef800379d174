"""The async twins against their sync methods, in the same run on one private redis-server.

    python benchmarks/bench_async.py [--calls 2000] [--tasks 50] [--rounds 3]

For each operation: calls per second made one after another with the sync method, with the
async twin awaited one after another (the event loop's own cost on top of the same round trip),
and with ``--tasks`` concurrent tasks on one loop (what an ASGI process serving many requests
at once gets from one thread). Ratios are against the sync figure; best of ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from common import start

T0 = 1_700_000_000


def operations() -> dict[str, tuple[Callable[[int], Any], Callable[[int], Awaitable[Any]]]]:
    from django_redis_metrics import (
        Counter,
        EventSeries,
        Gauge,
        Statistic,
        UniqueBitmap,
        UniqueEstimate,
    )

    hits, orders = Counter("bench hits"), EventSeries("bench orders", index=["type"])
    active = UniqueBitmap("bench active")
    latency, queue = Statistic("bench latency"), Gauge("bench queue")
    visitors = UniqueEstimate("bench visitors")
    for i in range(500):
        orders.record(T0 + i, type=f"t{i % 5}")
    return {
        "Counter.incr": (lambda i: hits.incr(), lambda i: hits.aincr()),
        "Counter.recent(60, 120)": (
            lambda i: hits.recent(60, 120),
            lambda i: hits.arecent(60, 120),
        ),
        "EventSeries.record": (
            lambda i: orders.record(type="t1"),
            lambda i: orders.arecord(type="t1"),
        ),
        "EventSeries.counts (50 windows)": (
            lambda i: orders.counts(T0, T0 + 500, 10),
            lambda i: orders.acounts(T0, T0 + 500, 10),
        ),
        "UniqueBitmap.mark": (lambda i: active.mark(i), lambda i: active.amark(i)),
        "last(30).count()": (lambda i: active.last(30).count(), lambda i: active.last(30).acount()),
        "Statistic.record": (lambda i: latency.record(i % 97), lambda i: latency.arecord(i % 97)),
        "Statistic.summary(3600)": (
            lambda i: latency.summary(3600),
            lambda i: latency.asummary(3600),
        ),
        "Gauge.set": (lambda i: queue.set(i), lambda i: queue.aset(i)),
        "UniqueEstimate.add": (lambda i: visitors.add(i), lambda i: visitors.aadd(i)),
        "estimate last(30).count()": (
            lambda i: visitors.last(30).count(),
            lambda i: visitors.last(30).acount(),
        ),
    }


def rate_sync(action: Callable[[int], Any], calls: int) -> float:
    started = time.perf_counter()
    for i in range(calls):
        action(i)
    return calls / (time.perf_counter() - started)


async def rate_async(action: Callable[[int], Awaitable[Any]], calls: int, tasks: int) -> float:
    async def worker(first: int) -> None:
        for i in range(first, calls, tasks):
            await action(i)

    started = time.perf_counter()
    await asyncio.gather(*(worker(first) for first in range(tasks)))
    return calls / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    server = start("bench-async")
    try:
        from django_redis_metrics.core.aio import aclose_connections

        async def measure() -> None:
            print(f"{'operation':34} {'sync/s':>9} {'await/s':>9} {'ratio':>6} "
                  f"{options.tasks:>3} tasks/s {'ratio':>6}")  # fmt: skip
            for name, (sync, asynchronous) in operations().items():
                await asynchronous(0)  # the loop's client connected, scripts loaded
                figures = [0.0, 0.0, 0.0]
                for _ in range(options.rounds):
                    figures[0] = max(figures[0], rate_sync(sync, options.calls))
                    one = await rate_async(asynchronous, options.calls, 1)
                    many = await rate_async(asynchronous, options.calls, options.tasks)
                    figures[1], figures[2] = max(figures[1], one), max(figures[2], many)
                base, one, many = figures
                print(f"{name:34} {base:9,.0f} {one:9,.0f} {one / base:6.2f} "
                      f"{many:13,.0f} {many / base:6.2f}")  # fmt: skip
            await aclose_connections()

        asyncio.run(measure())
    finally:
        server.stop()


if __name__ == "__main__":
    main()
