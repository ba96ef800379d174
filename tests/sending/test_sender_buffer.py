"""The sender's buffer and backoff on their own: the memory estimate against tracemalloc, the
accounting of what waits, and the delays between attempts."""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest

from django_redis_metrics import EventSeries
from django_redis_metrics.core.batch import Batch
from django_redis_metrics.sending import failopen
from django_redis_metrics.sending.buffer import Buffer, estimated_size
from django_redis_metrics.sending.writes import Submission, Writes

ORDERS = EventSeries("orders", index=["type"])


def middleware(index: int) -> Submission:
    """What the middleware queues for a signed-in request: 2 hits and a mark."""
    writes = Writes()
    writes.incr("hits")
    writes.incr("hits:{view}".replace("{view}", "shop:product"))  # a new string each time
    writes.mark("active_users", 1000 + index, time.time())
    return Submission(writes, int(time.time()))


def anonymous(index: int) -> Submission:
    writes = Writes()
    writes.incr("hits")
    writes.incr("hits:{view}".replace("{view}", "shop:product"))
    return Submission(writes, int(time.time()))


def with_event(index: int) -> Submission:
    """2 hits and an event of 4 fields recorded by ``track_event``."""
    submission = anonymous(index)
    values = {"view": "shop:buy", "type": "purchase", "user": 1000 + index, "total": "19.90"}
    when = time.time()

    def write(batch: Batch) -> None:
        ORDERS.record(when=when, batch=batch, **values)

    submission.writes.defer(write, "orders")
    return submission


@pytest.mark.parametrize("make", [anonymous, middleware, with_event])
def test_the_size_estimate_covers_what_a_queued_request_really_takes(
    make: Callable[[int], Submission],
) -> None:
    buffer = Buffer()
    count = 5000
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for index in range(count):
            assert buffer.put(make(index), 10**9, 10**12)
        measured = (tracemalloc.get_traced_memory()[0] - before) / count
    finally:
        tracemalloc.stop()
    estimated = buffer.size / count
    assert measured <= estimated <= 1.25 * measured, (measured, estimated)


def test_the_buffer_counts_what_is_taken_until_it_is_done() -> None:
    buffer = Buffer()
    items = [anonymous(index) for index in range(3)]
    for item in items:
        assert buffer.put(item, 3, 10**6)
    assert not buffer.put(anonymous(3), 3, 10**6)  # full by count
    taken = buffer.take(2)
    assert taken.items == items[:2]
    assert (len(buffer), buffer.count) == (1, 3)  # taken, still counted
    buffer.put_back(taken)
    assert buffer.take(3).items == items  # back in front, in order
    buffer.clear()
    assert (len(buffer), buffer.count, buffer.size) == (0, 0, 0)
    size = estimated_size(items[0])
    assert buffer.put(items[0], 10, size)
    assert not buffer.put(items[1], 10, size)  # full by bytes


def test_the_backoff_doubles_up_to_its_cap_and_starts_over(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.DJANGO_REDIS_METRICS = {"SEND_RETRY_DELAY": 0.1, "SEND_RETRY_MAX_DELAY": 0.5}
    monkeypatch.setattr(failopen.random, "uniform", lambda low, high: high)
    backoff = failopen.Backoff()
    assert [round(backoff.next_delay(), 3) for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    backoff.reset()
    assert backoff.next_delay() == pytest.approx(0.1)
    monkeypatch.setattr(failopen.random, "uniform", lambda low, high: low)
    assert backoff.next_delay() == pytest.approx(0.16)  # a fifth shorter, at most
