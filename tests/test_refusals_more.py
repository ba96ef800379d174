"""Refusals that write nothing at all: not even writes undone in the same script, which replicas
and the AOF would still receive. Shown by the keyspace (DUMP and TTL of every key) and by Redis's
dirty counter (``rdb_changes_since_last_save``: every write command counts)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from django_redis_metrics import (
    Batch,
    Counter,
    EventSeries,
    Gauge,
    Statistic,
    UniqueBitmap,
    UniqueEstimate,
)
from django_redis_metrics.core.retention import MAX_AHEAD

from .test_refusals import keyspace


def dirty(client: Any) -> int:
    """Writes the Redis server has applied since its last save."""
    return int(client.info("persistence")["rdb_changes_since_last_save"])


@pytest.mark.parametrize("written_before", [True, False], ids=["existing", "new"])
def test_a_counter_slice_past_the_clock_is_refused_with_zero_writes(
    single: Any, written_before: bool
) -> None:
    counter = Counter("c")
    if written_before:
        counter.incr()
    before, writes = keyspace(single), dirty(single.client)
    with pytest.raises(ValueError, match="ahead of the Redis server clock"):
        counter.incr(1, time.time() + 3600)
    assert dirty(single.client) == writes
    assert keyspace(single) == before


def test_incr_many_with_one_late_slice_writes_nothing(single: Any) -> None:
    counter = Counter("c")
    now = time.time()
    counter.incr(1, now)
    before, writes = keyspace(single), dirty(single.client)
    with pytest.raises(ValueError, match="ahead of the Redis server clock"):
        counter.incr_many([(now, 1), (now - 7200, 2), (now + MAX_AHEAD + 3600, 1)])
    assert dirty(single.client) == writes
    assert keyspace(single) == before


def test_a_slice_within_the_allowed_lead_is_still_written(single: Any) -> None:
    counter = Counter("c", precisions=[1])
    counter.incr(3, time.time() + MAX_AHEAD / 2)
    assert counter.lifetime_total() == 3


NOT_A_BATCH: list[tuple[str, Callable[[Any], Any]]] = [
    ("Counter.incr", lambda bad: Counter("c").incr(batch=bad)),
    ("Gauge.set", lambda bad: Gauge("g").set(1, batch=bad)),
    ("Statistic.record", lambda bad: Statistic("s").record(1, batch=bad)),
    ("Statistic.record_many", lambda bad: Statistic("s").record_many([1, 2], batch=bad)),
    ("UniqueBitmap.mark", lambda bad: UniqueBitmap("u").mark(1, batch=bad)),
    ("UniqueEstimate.add", lambda bad: UniqueEstimate("v").add(1, batch=bad)),
    ("EventSeries.record", lambda bad: EventSeries("e").record(batch=bad, kind="x")),
]


@pytest.mark.parametrize("bad", [object(), "batch", [], True], ids=repr)
@pytest.mark.parametrize(("label", "write"), NOT_A_BATCH, ids=[n[0] for n in NOT_A_BATCH])
def test_a_batch_that_is_not_a_batch_is_refused_with_zero_writes(
    single: Any, label: str, write: Callable[[Any], Any], bad: object
) -> None:
    before, writes = keyspace(single), dirty(single.client)
    with pytest.raises(TypeError, match="batch must be a Batch, not"):
        write(bad)
    assert dirty(single.client) == writes
    assert keyspace(single) == before


def test_statistic_time_refuses_a_bad_batch_before_the_block_runs(single: Any) -> None:
    ran = []
    timing = Statistic("s").time(batch="not a batch")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="batch must be a Batch"), timing:
        ran.append(1)
    assert ran == []
    assert single.keys() == []


def test_a_real_batch_still_works(single: Any) -> None:
    with Batch() as batch:
        Counter("c").incr(batch=batch)
        with Statistic("s").time(batch=batch):
            pass
    assert Counter("c").lifetime_total() == 1
    assert Statistic("s").totals()["count"] == 1


ODD_INPUTS: list[tuple[str, Callable[[], Any], type[Exception], str]] = [
    (
        "precisions as a bytearray",
        lambda: Counter("c", precisions=bytearray(b"<\x01")),  # type: ignore[arg-type]
        TypeError,
        "precisions must be a sequence of seconds, not bytearray",
    ),
    (
        "precisions as a memoryview",
        lambda: Statistic("s", precisions=memoryview(b"<")),  # type: ignore[arg-type]
        TypeError,
        "precisions must be a sequence of seconds, not memoryview",
    ),
    (
        "record_many of bytes",
        lambda: Statistic("s").record_many(b"1"),  # type: ignore[arg-type]
        TypeError,
        "values must be a sequence of numbers, not bytes",
    ),
    (
        "record_many of a str",
        lambda: Statistic("s").record_many("12"),  # type: ignore[arg-type]
        TypeError,
        "values must be a sequence of numbers, not str",
    ),
    (
        "record_many of a number",
        lambda: Statistic("s").record_many(5),  # type: ignore[arg-type]
        TypeError,
        "values must be a sequence of numbers, not int",
    ),
    (
        "retention 1e-300",
        lambda: EventSeries("e", retention=1e-300),
        ValueError,
        "retention must be at least 1 second",
    ),
    (
        "counts(cache=object())",
        lambda: EventSeries("e").counts(0, 3600, 60, cache=object()),  # type: ignore[arg-type]
        TypeError,
        "cache must be True or False, not object",
    ),
    (
        "counts(cache='no')",
        lambda: EventSeries("e").counts(0, 3600, 60, cache="no"),  # type: ignore[arg-type]
        TypeError,
        "cache must be True or False",
    ),
]


@pytest.mark.parametrize(
    ("label", "action", "error", "says"), ODD_INPUTS, ids=[o[0] for o in ODD_INPUTS]
)
def test_odd_inputs_are_refused_with_zero_writes(
    single: Any, label: str, action: Callable[[], Any], error: type[Exception], says: str
) -> None:
    EventSeries("e").record(kind="x")
    Statistic("s").record(1)
    before, writes = keyspace(single), dirty(single.client)
    with pytest.raises(error, match=says):
        action()
    assert dirty(single.client) == writes
    assert keyspace(single) == before
