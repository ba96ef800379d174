"""A slice hash deleted or evicted while its metric lives on is made again by the next write
that opens a slice there, by the write script (Redis Cluster, a ``Batch``, statistics, gauges):
it gets its TTL then, whatever the meta hash remembers of the TTL it set before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from django_redis_metrics import Counter, Gauge, Statistic
from django_redis_metrics.core.batch import Batch

T0 = 1_700_000_040  # a fixed epoch second, a multiple of 60, far behind any clock


def counter_in_batches(when: float) -> Any:
    counter = Counter("deleted-hash", precisions=[60, 3600])
    with Batch() as batch:  # a Batch: always the script
        counter.incr(when=when, batch=batch)
    return counter


def statistic(when: float) -> Any:
    metric = Statistic("deleted-hash", precisions=[60, 3600])
    metric.record(12.5, when=when)
    return metric


def gauge(when: float) -> Any:
    metric = Gauge("deleted-hash", precisions=[60, 3600])
    metric.set(3, when=when)
    return metric


@pytest.mark.parametrize("write", [counter_in_batches, statistic, gauge])
def test_a_hash_made_again_by_the_script_gets_its_ttl(
    backend: Any, write: Callable[[float], Any]
) -> None:
    metric = write(T0)
    backend.client.delete(metric.key(60))
    write(T0 + 60)  # a new 60 s slice, in a hash that is gone
    assert backend.client.pttl(metric.key(60)) > 0
    assert backend.client.pttl(metric.key(3600)) > 0
