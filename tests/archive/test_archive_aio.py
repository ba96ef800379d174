"""``ahistory`` (models and querysets) answers as ``history`` does, across the boundary."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from django_redis_metrics import Counter, Gauge, Statistic
from django_redis_metrics.archive.passes import archive_all
from django_redis_metrics.core.timeutil import slice_start

from ..asyncio_helpers import run
from ..conftest import Backend
from .conftest import ARCHIVE_DATABASES

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES, transaction=True)


def test_async_history_reads_like_sync_history(
    backend: Backend, metrics_settings: Callable[..., None], archive_db: str
) -> None:
    metrics_settings(
        COUNTER_PRECISIONS=(10,),
        COUNTER_SAMPLES=3,
        STATISTIC_PRECISIONS=(10,),
        STATISTIC_SAMPLES=3,
        ARCHIVE_PRECISIONS=(10,),
        ARCHIVE_DATABASE=archive_db,
    )
    base = float(slice_start(time.time(), 600) - 600)
    hits, latency, queue = Counter("hits", labels=("view",)), Statistic("ms"), Gauge("queue")
    for i in range(12):
        at = base + 10 * i + 3
        hits.labels(view=str(i % 2)).incr(i + 1, when=at)
        latency.record(i + 0.5, when=at)
        queue.set(i, when=at)
        archive_all(now=at + 10)
    end = base + 130

    async def main() -> Any:
        try:
            return (
                await hits.ahistory(10, base, end),
                await latency.ahistory(10, base, end),
                await queue.ahistory(10, base, end),
                await Counter.objects.filter(name="hits").ahistory(10, base, end),
            )
        finally:  # the worker thread's connections, as Django closes them after a request
            await sync_to_async(connections.close_all)()

    counts, summaries, gauges, selected = run(main)
    assert counts == hits.history(10, base, end) == selected
    assert [n for _, n in counts] == [*range(1, 13), 0, 0]  # the archive's, Redis's, none yet
    assert summaries == latency.history(10, base, end)
    assert [s["count"] for _, s in summaries] == [1] * 12 + [0, 0]
    assert gauges == queue.history(10, base, end)
    assert [g["last"] for _, g in gauges] == [float(i) for i in range(12)]
