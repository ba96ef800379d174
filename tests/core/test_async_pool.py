"""Awaits beyond the async pool wait for a free connection (ASYNC_MAX_CONNECTIONS) instead of
redis-py raising MaxConnectionsError, and give up after ASYNC_POOL_TIMEOUT with our own error."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from django_redis_metrics import AsyncPoolTimeout, Counter
from django_redis_metrics.core.aio import aclose_connections

AWAITS = 1000


def client_count(backend: Any) -> int:
    """Connected clients, summed over every node of a cluster."""
    if backend.name == "cluster":
        found = backend.client.info("clients", target_nodes=backend.client.ALL_NODES)
        return sum(int(node["connected_clients"]) for node in found.values())
    return int(backend.client.info("clients")["connected_clients"])


def gather_increments(counter: Counter, awaits: int) -> list[Any]:
    async def main() -> list[Any]:
        try:
            return await asyncio.gather(
                *(counter.aincr(1, when=1_000) for _ in range(awaits)), return_exceptions=True
            )
        finally:
            await aclose_connections()

    return asyncio.run(main())


def test_a_thousand_concurrent_awaits_on_one_loop(backend: Any) -> None:
    counter = Counter("busy", precisions=[86400])
    results = gather_increments(counter, AWAITS)
    assert [r for r in results if isinstance(r, BaseException)] == []
    assert counter.total(86400) == AWAITS


@pytest.mark.parametrize("limit", [1, 7])
def test_the_pool_opens_at_most_its_connections(
    backend: Any, metrics_settings: Any, limit: int
) -> None:
    metrics_settings(ASYNC_MAX_CONNECTIONS=limit)
    counter = Counter("bounded", precisions=[86400])
    before = client_count(backend)
    peak = [0]

    async def main() -> None:
        async def watch() -> None:
            while True:
                peak[0] = max(peak[0], await asyncio.to_thread(client_count, backend))
                await asyncio.sleep(0.005)

        watcher = asyncio.create_task(watch())
        try:
            await asyncio.gather(*(counter.aincr(1, when=1_000) for _ in range(300)))
        finally:
            watcher.cancel()
            await aclose_connections()

    asyncio.run(main())
    assert counter.total(86400) == 300
    nodes = 3 if backend.name == "cluster" else 1
    # The watcher's own sync connection aside (one per node, counted in `before` or not).
    assert peak[0] - before <= limit * nodes + nodes


def test_an_await_that_waits_too_long_raises_our_error(single: Any, metrics_settings: Any) -> None:
    metrics_settings(ASYNC_MAX_CONNECTIONS=1, ASYNC_POOL_TIMEOUT=0.3)
    counter = Counter("paused", precisions=[86400])
    single.client.execute_command("CLIENT", "PAUSE", 1500, "ALL")  # the one connection waits
    started = time.monotonic()
    results = gather_increments(counter, 2)
    elapsed = time.monotonic() - started
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 1 and isinstance(errors[0], AsyncPoolTimeout)
    assert "ASYNC_MAX_CONNECTIONS" in str(errors[0]) and "0.3 s" in str(errors[0])
    assert elapsed >= 1.0  # the other one waited out the pause, and was written
    assert counter.total(86400) == 1
