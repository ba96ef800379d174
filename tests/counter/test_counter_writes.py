"""One round trip per write, nothing written on bad input, scripts reloaded after a flush."""

from __future__ import annotations

import math
import threading
import time
from datetime import UTC, datetime

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from django_redis_metrics import Batch, Counter
from django_redis_metrics.core.batch import refuses_only_this_write
from django_redis_metrics.core.scripts import REFUSED, MetricsRefused, error_code
from django_redis_metrics.counter.cleaner import clean_counters

T0 = 1_700_000_000


def test_incr_is_one_round_trip(backend, round_trips):
    counter = Counter("trips")
    counter.incr(when=T0)  # first write: script load and cluster catalogue registration
    round_trips.reset()
    for _ in range(5):
        counter.incr(when=T0)
    assert round_trips.calls == 5
    assert counter.series(86400) == [(T0 // 86400 * 86400, 6)]


def test_a_batch_of_counters_is_one_round_trip_on_a_single_node(single, round_trips):
    counters = [Counter(f"c{i}") for i in range(10)]
    for counter in counters:
        counter.incr(when=T0)
    round_trips.reset()
    with Batch() as batch:
        for counter in counters:
            counter.incr(when=T0, batch=batch)
    assert round_trips.calls == 1
    assert all(c.total() == 2 for c in counters)


def test_writes_survive_a_script_flush(backend):
    counter = Counter("flushed", precisions=[60])
    counter.incr(when=T0)
    backend.client.script_flush()
    counter.incr(when=T0)
    backend.client.script_flush()
    with Batch() as batch:
        counter.incr(when=T0, batch=batch)
        Counter("other", precisions=[60]).incr(when=T0, batch=batch)
    assert counter.series(60) == [(T0 // 60 * 60, 3)]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"count": "1"}, TypeError, "count must be an int"),
        ({"count": 1.5}, TypeError, "count must be an int"),
        ({"count": True}, TypeError, "count must be an int"),
        ({"count": 2**60}, ValueError, "within"),
        ({"when": datetime(2024, 1, 1)}, ValueError, "aware datetime"),
        ({"when": math.nan}, ValueError, "finite"),
        ({"when": math.inf}, ValueError, "finite"),
        ({"when": "2024-01-01"}, TypeError, "aware datetime or epoch seconds"),
        ({"when": True}, TypeError, "bool"),
    ],
)
def test_bad_increments_raise_and_write_nothing(backend, kwargs, error, message):
    with pytest.raises(error, match=message):
        Counter("bad").incr(**kwargs)
    assert backend.keys() == []


def test_a_bad_item_in_incr_many_writes_nothing(backend):
    with pytest.raises(ValueError, match="aware datetime"):
        Counter("bulk").incr_many([(T0, 1), (T0 + 1, 2), (datetime(2024, 1, 1), 1)])
    with pytest.raises(TypeError, match=r"\(when, count\) pairs"):
        Counter("bulk").incr_many([(T0, 1), T0])
    assert backend.keys() == []


@pytest.mark.parametrize(
    ("name", "error", "message"),
    [
        ("", ValueError, "empty"),
        ("   ", ValueError, "empty"),
        ("x" * 201, ValueError, "at most 200"),
        ("a\nb", ValueError, "control character"),
        ("a\x00b", ValueError, "control character"),
        ("a{b", ValueError, "braces"),
        ("a}b", ValueError, "braces"),
        (42, TypeError, "must be a str"),
        (None, TypeError, "must be a str"),
    ],
)
def test_bad_names_are_refused(name, error, message):
    with pytest.raises(error, match=message):
        Counter(name)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"precisions": []}, ValueError, "at least one"),
        ({"precisions": [0]}, ValueError, "positive"),
        ({"precisions": [1.5]}, TypeError, "int number of seconds"),
        ({"precisions": "60"}, TypeError, "sequence"),
        ({"samples": 0}, ValueError, "positive"),
        ({"samples": "120"}, TypeError, "int"),
    ],
)
def test_bad_configuration_is_refused(kwargs, error, message):
    with pytest.raises(error, match=message):
        Counter("configured", **kwargs)


def test_reading_an_unconfigured_precision_is_a_clear_error(backend):
    counter = Counter("reads", precisions=[1, 60])
    with pytest.raises(ValueError, match="has no precision 5; it keeps 1, 60"):
        counter.series(5)
    with pytest.raises(ValueError, match="has no precision 5"):
        counter.recent(5)
    with pytest.raises(TypeError, match="precision must be an int"):
        counter.series("60")


def test_listed_counters_cost_one_round_trip_on_the_cluster(cluster, round_trips):
    counter = Counter("listed", precisions=[60])
    counter.incr(when=T0)
    round_trips.reset()
    counter.incr(when=T0)
    assert round_trips.calls == 1


def test_increments_adding_up_beyond_the_limit_write_nothing(backend):
    with pytest.raises(ValueError, match=r"add up to .* beyond"):
        Counter("sum", precisions=[1, 86400]).incr_many([(T0 + i, 2**53) for i in range(3)])
    assert backend.keys() == []


def test_an_overflowing_slice_undoes_the_whole_increment(backend):
    counter = Counter("full", precisions=[1, 60, 86400])
    counter.incr(when=T0)
    day_key = counter.key(86400)
    backend.client.hset(day_key, T0 // 86400 * 86400, 2**63 - 10)
    before = {key: backend.client.dump(key) for key in backend.keys()}
    with pytest.raises(MetricsRefused, match="would overflow"):
        counter.incr(20, when=T0 + 1)  # the 1 s and 60 s slices succeed first, then day overflows
    assert {key: backend.client.dump(key) for key in backend.keys()} == before
    counter.incr(5, when=T0 + 1)
    assert counter.series(1) == [(T0, 1), (T0 + 1, 5)]


def test_a_slice_of_another_type_undoes_the_whole_increment_and_keeps_its_error(backend):
    counter = Counter("typed", precisions=[1, 60, 86400])
    counter.incr(when=T0)
    backend.client.delete(counter.key(86400))
    backend.client.set(counter.key(86400), "a string")
    before = {key: backend.client.dump(key) for key in backend.keys()}
    with pytest.raises(redis.ResponseError, match=r"^WRONGTYPE") as refused:
        counter.incr(when=T0 + 1)
    assert {key: backend.client.dump(key) for key in backend.keys()} == before
    assert refuses_only_this_write(refused.value)


def test_only_errors_about_one_call_count_as_refusing_that_call(single):
    counter = Counter("refusals", precisions=[60])
    counter.incr(when=T0)
    single.client.hset(counter.key(60), T0 // 60 * 60, 2**63 - 1)
    with pytest.raises(MetricsRefused) as overflow:  # a ValueError, the reply its cause
        counter.incr(when=T0)
    assert isinstance(overflow.value, ValueError)
    assert error_code(overflow.value.__cause__) == REFUSED
    assert refuses_only_this_write(overflow.value)
    with pytest.raises(redis.ResponseError) as lua_error:
        single.client.eval("local missing = nil; return missing.field", 0)
    assert refuses_only_this_write(lua_error.value)
    with pytest.raises(redis.ResponseError) as unknown:
        single.client.execute_command("NO-SUCH-COMMAND")
    assert not refuses_only_this_write(unknown.value)
    assert not refuses_only_this_write(redis.ReadOnlyError("You can't write against a replica"))
    assert not refuses_only_this_write(redis.ResponseError("MISCONF Redis is configured to save"))


def test_too_many_precisions_are_refused():
    with pytest.raises(ValueError, match="at most 64 precisions"):
        Counter("wide", precisions=range(1, 100))


@pytest.mark.parametrize("when", [1e20, -1e19, datetime(9999, 12, 31, tzinfo=UTC)])
def test_times_outside_the_calendar_are_refused(backend, when):
    with pytest.raises(ValueError, match="years 2 to 9998"):
        Counter("far").incr(when=when)
    assert backend.keys() == []


def test_names_with_lone_surrogates_are_refused():
    with pytest.raises(ValueError, match="surrogate"):
        Counter("bad \ud800 name")


def test_a_counter_retired_while_its_writer_lists_it_leaves_no_ghost(cluster, monkeypatch):
    """A writer told to list a counter stalls; meanwhile the cleaner retires it. Listing must not
    recreate a meta hash holding only the 'listed' flag."""
    from django_redis_metrics.core import catalogue

    register_steps = catalogue.register_steps
    client = cluster.client

    def stalls_while_the_cleaner_retires(kind, name):
        counter = Counter(name, precisions=[1])
        client.hdel(counter.key(1), T0)  # the cleaner trims the slice ...
        client.delete(counter.meta_key)  # ... and the retire script drops the meta hash
        yield from register_steps(kind, name)

    monkeypatch.setattr(catalogue, "register_steps", stalls_while_the_cleaner_retires)
    Counter("ghost", precisions=[1]).incr(when=T0)
    monkeypatch.undo()
    assert not cluster.client.exists(Counter("ghost").meta_key)
    assert cluster.client.zscore(catalogue.catalogue_key("counter"), "ghost") == 0  # listed ...
    assert [c.name for c in Counter.objects.all()] == []  # ... until a listing forgets it
    assert cluster.client.zscore(catalogue.catalogue_key("counter"), "ghost") is None
    clean_counters(now=T0)
    assert Counter.objects.names() == []


def test_a_refused_write_in_a_batch_leaves_the_others_and_the_socket_in_step(single):
    single.client.set(Counter("broken").meta_key, "not a hash")  # its script gets WRONGTYPE
    batch = Batch()
    Counter("before").incr(when=T0, batch=batch)
    Counter("broken").incr(when=T0, batch=batch)
    Counter("after").incr(when=T0, batch=batch)
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        batch.execute()
    assert Counter("before").total() == Counter("after").total() == 1
    assert single.client.ping() is True  # no reply left unread on the pooled connection


def test_a_batch_that_timed_out_leaves_no_reply_for_the_next_one(single):
    client = redis.Redis.from_url(single.url, socket_timeout=0.2)
    Counter("slow").incr(when=T0)
    single.client.client_pause(600, all=False)  # writes (the scripts) wait 0.6 s
    batch = Batch(client=client)
    Counter("slow").incr(when=T0, batch=batch)
    Counter("slow").incr(when=T0, batch=batch)
    with pytest.raises(redis.TimeoutError):
        batch.execute()
    single.client.client_unpause()
    with Batch(client=client) as batch:
        Counter("slow").incr(2, when=T0, batch=batch)
        Counter("other").incr(when=T0, batch=batch)
    assert batch.results == [None, None]
    assert client.get(Counter("slow").meta_key + "-missing") is None
    assert Counter("slow").total() in (3, 5)  # the timed-out writes may have run after all


def drop_connections_while_writes_wait(url: str) -> threading.Thread:
    """Hold every write for 0.5 s and, 0.1 s in, close every other client's connection."""
    admin = redis.Redis.from_url(url)
    admin.client_pause(500, all=False)

    def drop() -> None:
        time.sleep(0.1)
        admin.client_kill_filter(_type="normal", skipme=True)

    dropper = threading.Thread(target=drop)
    dropper.start()
    return dropper


def test_a_batch_is_retried_on_a_dropped_connection_like_any_command(single):
    client = redis.Redis.from_url(single.url, retry=Retry(NoBackoff(), 3))
    Counter("a").incr(when=T0)
    Counter("b").incr(when=T0)
    dropper = drop_connections_while_writes_wait(single.url)
    with Batch(client=client) as batch:
        Counter("a").incr(when=T0, batch=batch)
        Counter("b").incr(when=T0, batch=batch)
    dropper.join()
    assert Counter("a").total() == Counter("b").total() == 2


def test_a_single_node_counter_whose_listing_was_lost_is_listed_by_its_next_slice(single):
    """On a single node the write that opens a slice lists the counter; increments of an
    existing slice skip the check (one command less), so a listing lost some other way comes
    back with the next slice."""
    from django_redis_metrics.core import catalogue

    counter = Counter("relisted", precisions=[1, 60])
    counter.incr(when=T0)
    single.client.zrem(catalogue.catalogue_key("counter"), "relisted")
    single.client.hdel(counter.meta_key, "listed")
    counter.incr(when=T0)  # the same slices: no check
    counter.incr(when=T0 + 1)  # a new 1 s slice
    assert Counter.objects.names() == ["relisted"]
    assert single.client.hget(counter.meta_key, "listed") in (b"1", "1")
    assert counter.lifetime_total() == 3
