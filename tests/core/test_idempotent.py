"""Idempotent variants of the write scripts: a call numbered by a sender is applied at most once,
however often it is sent, on a single node and on Redis Cluster, in one round trip."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from redis.exceptions import OutOfMemoryError, ResponseError

from django_redis_metrics import Counter, EventSeries, UniqueBitmap
from django_redis_metrics.core.batch import (
    Batch,
    ScriptCall,
    is_outage,
    refuses_only_this_write,
    run_calls,
)
from django_redis_metrics.core.connection import get_redis_connection
from django_redis_metrics.core.scripts import OUT_OF_ORDER, LuaScript, error_code, once_key
from django_redis_metrics.testing import RedisServer

WHEN = 1_700_000_000


@pytest.fixture
def fresh_server(settings: Any) -> Iterator[RedisServer]:
    """A server of this test's own (its memory limit changes), and settings pointing at it."""
    server = RedisServer().start()
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": server.url, "PREFIX": "once"}
    yield server
    server.cleanup()


def prepared(write: Any) -> list[ScriptCall]:
    """The calls ``write(batch)`` adds to a batch like the sender's (one call per write), unsent."""
    batch = Batch(joins=False)
    write(batch)
    return batch.calls


def numbered(calls: list[ScriptCall], sender: str, first: int) -> list[ScriptCall]:
    return [call.once(sender, first + index) for index, call in enumerate(calls)]


def test_a_call_sent_again_with_its_number_is_applied_once(backend: Any) -> None:
    counter = Counter("once", precisions=[60])
    calls = numbered(prepared(lambda b: counter.incr(5, when=WHEN, batch=b)), "s1", 1)
    client = get_redis_connection()
    duplicates: list[ScriptCall] = []
    assert run_calls(client, calls, [], duplicates) == [None]  # the after-callback's result
    assert duplicates == []
    assert run_calls(client, calls, [], duplicates) == [None]
    assert duplicates == calls  # Redis answered DRM_DUPLICATE: nothing written
    assert counter.total() == 5


def test_several_calls_on_one_metric_in_one_batch_each_apply_once(backend: Any) -> None:
    counter = Counter("twice", precisions=[1])

    def writes(batch: Batch) -> None:
        counter.incr(1, when=WHEN, batch=batch)
        counter.incr(2, when=WHEN + 1, batch=batch)

    calls = numbered(prepared(writes), "s1", 10)
    client = get_redis_connection()
    run_calls(client, calls)
    assert counter.series(1) == [(WHEN, 1), (WHEN + 1, 2)]
    run_calls(client, calls)  # the whole batch again: both already applied
    run_calls(client, calls[1:])
    assert counter.series(1) == [(WHEN, 1), (WHEN + 1, 2)]


def test_the_first_calls_of_a_batch_applied_and_the_rest_not_apply_the_rest_only(
    backend: Any,
) -> None:
    counter = Counter("partial", precisions=[60])

    def writes(batch: Batch) -> None:
        counter.incr(1, when=WHEN, batch=batch)
        counter.incr(10, when=WHEN, batch=batch)

    calls = numbered(prepared(writes), "s1", 1)
    client = get_redis_connection()
    run_calls(client, calls[:1])  # the connection broke after the first call was applied
    run_calls(client, calls)  # so the sender sends the batch again
    assert counter.total() == 11


def test_numbers_are_per_sender(backend: Any) -> None:
    counter = Counter("senders", precisions=[60])
    client = get_redis_connection()
    for sender in ("a", "b"):
        run_calls(client, numbered(prepared(lambda b: counter.incr(when=WHEN, batch=b)), sender, 1))
    run_calls(client, numbered(prepared(lambda b: counter.incr(when=WHEN, batch=b)), "a", 1))
    assert counter.total() == 2
    assert {k.decode() for k in backend.client.hkeys(once_key(counter.meta_key))} == {"a", "b"}


def test_every_write_script_has_an_idempotent_variant(backend: Any) -> None:
    now = time.time()  # within the bitmap's retention
    series = EventSeries("orders", index=["type"])
    bitmap = UniqueBitmap("buyers", periods=("day",))  # str ids: mapped (in the script)

    def writes(batch: Batch) -> None:
        series.record(when=now, batch=batch, type="book")
        bitmap.mark("someone", when=now, batch=batch)

    calls = numbered(prepared(writes), "s1", 1)
    client = get_redis_connection()
    first = run_calls(client, calls)
    again = run_calls(client, calls)
    assert isinstance(first[0], int)  # the event's id: its after-callback ran
    assert again == [None] * len(calls)  # skipped: nothing written, no callback
    assert series.count(0, 2**33) == 1
    assert bitmap.count("day", when=now) == 1


def test_a_refusal_for_good_is_remembered_and_not_applied_when_sent_again(
    backend: Any,
) -> None:
    counter = Counter("blocked", precisions=[60])
    backend.client.set(counter.meta_key, "not a hash")
    calls = numbered(prepared(lambda b: counter.incr(when=WHEN, batch=b)), "s1", 1)
    client = get_redis_connection()
    errors: list[tuple[ScriptCall, Exception]] = []
    run_calls(client, calls, errors)
    assert [error_code(error) for _call, error in errors] == ["WRONGTYPE"]
    assert refuses_only_this_write(errors[0][1])
    backend.client.delete(counter.meta_key)
    duplicates: list[ScriptCall] = []
    run_calls(client, calls, [], duplicates)  # its batch sent again (another call failed)
    assert duplicates == calls
    assert counter.total() == 0


def test_a_lua_error_in_the_script_is_a_refusal_of_that_call(single: Any) -> None:
    broken = ScriptCall(LuaScript("broken", "local x = nil\nreturn x + 1\n"), ["k{m}"], [])
    errors: list[tuple[ScriptCall, Exception]] = []
    run_calls(get_redis_connection(), [broken.once("s1", 1)], errors)
    [(_call, error)] = errors
    assert str(error).startswith("user_script:")
    assert refuses_only_this_write(error)


def test_a_write_refused_for_lack_of_memory_is_applied_when_sent_again(
    settings: Any, fresh_server: RedisServer
) -> None:
    counter = Counter("oom", precisions=[60])
    calls = numbered(prepared(lambda b: counter.incr(when=WHEN, batch=b)), "s1", 1)
    client = get_redis_connection()
    fresh_server.client().config_set("maxmemory", 1)
    with pytest.raises(OutOfMemoryError):
        run_calls(client, calls)
    assert not fresh_server.client().exists(calls[0].once_key())  # nothing remembered
    fresh_server.client().config_set("maxmemory", 0)
    run_calls(client, calls)
    assert counter.total() == 1


def test_a_later_call_on_a_metric_waits_for_the_earlier_one_of_its_batch(
    backend: Any,
) -> None:
    """A redirection or a failover can fail a batch's first call on a metric and not its
    second: the second must not be applied first, or the first would look applied."""
    counter = Counter("ordered", precisions=[1])

    def writes(batch: Batch) -> None:
        counter.incr(1, when=WHEN, batch=batch)
        counter.incr(2, when=WHEN + 1, batch=batch)

    first, second = prepared(writes)
    calls = [first.once("s1", 1), second.once("s1", 2, previous=1)]
    client = get_redis_connection()
    with pytest.raises(ResponseError) as refused:
        run_calls(client, calls[1:])
    assert error_code(refused.value) == OUT_OF_ORDER
    assert is_outage(refused.value)  # the sender sends the whole batch again
    run_calls(client, calls)
    assert counter.series(1) == [(WHEN, 1), (WHEN + 1, 2)]


def test_the_hash_of_numbers_lives_in_the_metrics_slot_with_a_ttl(backend: Any) -> None:
    counter = Counter("slot", precisions=[60])
    run_calls(
        get_redis_connection(),
        numbered(prepared(lambda b: counter.incr(when=WHEN, batch=b)), "s1", 1),
    )
    key = once_key(counter.meta_key)
    assert key == counter.meta_key.removesuffix(":meta") + ":once"
    ttl = backend.client.pttl(key)
    assert 0 < ttl <= LuaScript.ONCE_TTL * 1000
    if backend.cluster:
        assert backend.client.keyslot(key) == backend.client.keyslot(counter.meta_key)


def test_the_senders_remembered_per_metric_are_capped(
    single: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(LuaScript, "ONCE_MAX_SENDERS", 3)
    counter = Counter("crowded", precisions=[60])
    call = prepared(lambda b: counter.incr(when=WHEN, batch=b))[0]
    fresh = ScriptCall(LuaScript("capped", call.script.source), call.keys, call.args, call.then)
    client = get_redis_connection()
    for sender in range(10):
        run_calls(client, [fresh.once(f"sender{sender}", 1)])
    assert counter.total() == 10
    assert single.client.hlen(once_key(counter.meta_key)) == 3
    assert single.client.hget(once_key(counter.meta_key), "sender9") == b"1"


def test_a_batch_of_idempotent_calls_is_still_one_round_trip(single: Any, round_trips: Any) -> None:
    counters = [Counter(f"trip{index}", precisions=[60]) for index in range(5)]

    def writes(batch: Batch) -> None:
        for counter in counters:
            counter.incr(when=WHEN, batch=batch)

    client = get_redis_connection()
    run_calls(client, numbered(prepared(writes), "s1", 1))  # loads the variant (NOSCRIPT)
    again = numbered(prepared(writes), "s1", 6)
    assert round_trips(lambda: run_calls(client, again)) == 1
    assert [counter.total() for counter in counters] == [2] * 5
