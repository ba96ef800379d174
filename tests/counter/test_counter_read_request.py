"""A counter's ``recent`` and ``series`` as one request on a plain client (``counter/reading.py``):
the same answers as the steps (``drive``), whatever the hash holds (stale fields, gaps, fields
ahead), on RESP3 (``MULTI; HKEYS; HVALS; EXEC``) and RESP2 (``HGETALL``), for a labelled counter,
on a cluster, and where a transaction is refused; one round trip for an unlabelled counter; and
the same of the async twins (``arecent``, ``aseries``)."""

from __future__ import annotations

import random
from typing import Any

import pytest
from redis.exceptions import ResponseError

from django_redis_metrics import Counter, get_redis_connection
from django_redis_metrics.core.drive import drive
from django_redis_metrics.counter import reading

from ..asyncio_helpers import raised, run

T0 = 1_699_999_980  # a fixed epoch minute, far behind any clock: no write is ahead


def by_steps(counter: Counter, precision: int, count: int | None, until: float) -> object:
    """``recent`` as the steps answer it."""
    return drive(counter._recent_steps(precision, count, until))


def scattered(name: str, **options: object) -> Counter:
    counter = Counter(name, precisions=[1, 60], samples=30, **options)  # type: ignore[arg-type]
    rng = random.Random(name)
    target = counter.labels(view="a") if counter.label_names else counter
    for _ in range(80):
        target.incr(rng.randint(-2, 9), when=T0 + rng.uniform(0, 100))
    return counter


def test_one_request_answers_as_the_steps_on_every_window(backend):
    counter = scattered("one request")
    for precision in (1, 60):
        for count in (15, 29, 30, None):
            for until in (T0 + 40, T0 + 99.5, T0 + 150, T0 - 1):
                assert counter.recent(precision, count, until) == by_steps(
                    counter, precision, count, until
                )
        assert counter.series(precision) == drive(counter._series_steps(precision))


def test_stale_fields_beyond_retention_and_fields_ahead_are_left_out(single):
    counter = Counter("stale", precisions=[10], samples=4)
    counter.incr(5, when=T0)
    client = get_redis_connection()
    # What an older version or a clock ahead may leave: a slice long gone, one ahead.
    client.hset(counter.key(10), mapping={T0 - 10_000: 7, T0 + 10: 3, T0 + 500: 9})
    assert counter.recent(10, until=T0 + 15) == [(T0 - 20, 0), (T0 - 10, 0), (T0, 5), (T0 + 10, 3)]
    assert counter.recent(10, 2, until=T0 + 15) == [(T0, 5), (T0 + 10, 3)]
    assert counter.series(10) == [(T0 - 10_000, 7), (T0, 5), (T0 + 10, 3), (T0 + 500, 9)]
    assert counter.recent(10, until=T0 + 15) == by_steps(counter, 10, None, T0 + 15)


def test_an_empty_counter_reads_zeros(backend):
    counter = Counter("never written", precisions=[60], samples=3)
    assert counter.recent(60, until=T0 + 59) == [(T0 - 120, 0), (T0 - 60, 0), (T0, 0)]
    assert counter.series(60) == []


def test_a_labelled_counter_adds_its_series(backend):
    counter = scattered("labelled one request", labels=("view",))
    counter.labels(view="b").incr(4, when=T0 + 30)
    for precision in (1, 60):
        assert counter.recent(precision, until=T0 + 99) == by_steps(
            counter, precision, None, T0 + 99
        )
        assert counter.series(precision) == drive(counter._series_steps(precision))
    assert sum(c for _, c in counter.series(60)) == counter.labels(view="a").total(60) + 4


def test_an_unlabelled_counter_reads_in_one_round_trip(single, round_trips):
    counter = scattered("one trip")
    assert round_trips(lambda: counter.recent(60, until=T0 + 99)) == 1
    assert round_trips(lambda: counter.series(1)) == 1


@pytest.mark.parametrize("protocol", [2, 3])
def test_both_protocols_and_decoded_replies(single, metrics_settings, protocol):
    counter = scattered(f"protocol {protocol}")
    expected = counter.recent(1, until=T0 + 99), counter.series(1)
    for decoded in ("false", "true"):
        url = f"{single.url}?protocol={protocol}&decode_responses={decoded}"
        metrics_settings(CONNECTION=url)
        assert (counter.recent(1, until=T0 + 99), counter.series(1)) == expected


def test_a_key_of_another_type_raises_as_before(single):
    counter = Counter("wrong type", precisions=[60], samples=10)
    get_redis_connection().set(counter.key(60), "x")
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        counter.recent(60, until=T0)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        counter.series(60)


def reader_without_transactions(admin: Any, user: str, url: str) -> str:
    """The URL of a new ACL user who may read but not run ``MULTI``/``EXEC``."""
    admin.acl_setuser(
        user,
        reset=True,
        enabled=True,
        passwords=["+pw"],
        keys=["*"],
        categories=["-@all", "+@read", "+@connection"],
    )
    return url.replace("redis://", f"redis://{user}:pw@", 1)


def test_a_user_refused_transactions_reads_the_same(
    single, metrics_settings, redis_server, round_trips
):
    """An ACL user without ``+multi``/``+exec`` (the read goes the way of steps)."""
    counter = scattered("no transactions")
    expected = counter.recent(1, until=T0 + 99), counter.series(1)
    admin = redis_server.client()
    try:
        metrics_settings(CONNECTION=reader_without_transactions(admin, "reader", single.url))
        assert (counter.recent(1, until=T0 + 99), counter.series(1)) == expected
        # Refused once: the next reads go the steps' way at once (one round trip).
        assert round_trips(lambda: counter.recent(1, until=T0 + 99)) == 1
        assert counter.recent(1, until=T0 + 99) == expected[0]
    finally:
        admin.acl_deluser("reader")


def test_a_busy_counters_window_is_its_newest_fields(backend):
    """Every slice written: the hash's newest fields are the window itself, in order."""
    counter = Counter("busy", precisions=[1], samples=20)
    counter.incr_many((T0 + i, i + 1) for i in range(25))
    assert counter.recent(1, until=T0 + 24) == [(T0 + i, i + 1) for i in range(5, 25)]
    assert counter.recent(1, 15, until=T0 + 24) == [(T0 + i, i + 1) for i in range(10, 25)]
    # Fields newer than the window: looked up one by one (3 and 4 are past retention).
    expected = [(T0 + 3, 0), (T0 + 4, 0), *((T0 + i, i + 1) for i in range(5, 23))]
    assert counter.recent(1, until=T0 + 22) == expected == by_steps(counter, 1, None, T0 + 22)


def test_a_sharded_counter_reads_the_way_of_steps(single):
    counter = Counter("sharded one request", precisions=[60], samples=10, shards=3)
    for second in range(0, 600, 7):
        counter.incr(1, when=T0 + second)
    assert counter.recent(60, until=T0 + 599) == by_steps(counter, 60, None, T0 + 599)
    assert sum(c for _, c in counter.series(60)) == len(range(0, 600, 7))


def test_the_cache_of_requests_stays_bounded(single, monkeypatch):
    monkeypatch.setattr(reading, "REQUESTS_SIZE", 2)
    counters = [scattered(f"bounded {i}") for i in range(4)]
    for counter in counters:
        assert counter.recent(1, until=T0 + 99) == by_steps(counter, 1, None, T0 + 99)
    assert len(reading._requests) <= 2


def areads(counter: Counter, precision: int, count: int | None, until: float) -> object:
    """``arecent`` and ``aseries`` awaited on a fresh loop."""

    async def main() -> object:
        return await counter.arecent(precision, count, until), await counter.aseries(precision)

    return run(main)


@pytest.mark.parametrize("labelled", [False, True])
def test_the_async_reads_answer_as_the_steps(backend, labelled):
    options = {"labels": ("view",)} if labelled else {}
    counter = scattered(f"async one request {labelled}", **options)
    if labelled:
        counter.labels(view="b").incr(4, when=T0 + 30)
    for precision in (1, 60):
        for count in (15, None):
            for until in (T0 + 40, T0 + 150):
                expected = by_steps(counter, precision, count, until), counter.series(precision)
                assert areads(counter, precision, count, until) == expected


@pytest.mark.parametrize("protocol", [2, 3])
def test_an_async_read_is_the_one_request_on_both_protocols(single, metrics_settings, protocol):
    """On RESP3 the async read sends ``MULTI; HKEYS; HVALS; EXEC`` (it sent ``HGETALL``, whose
    map reply costs the caller about four times the two flat lists), on RESP2 ``HGETALL``."""
    counter = scattered(f"async protocol {protocol}")
    expected = counter.recent(1, None, T0 + 99), counter.series(1)
    for decoded in ("false", "true"):
        url = f"{single.url}?protocol={protocol}&decode_responses={decoded}"
        metrics_settings(CONNECTION=url)
        admin = single.client
        admin.config_resetstat()
        assert areads(counter, 1, None, T0 + 99) == expected
        stats = admin.info("commandstats")
        read = "cmdstat_hkeys" if protocol == 3 else "cmdstat_hgetall"
        assert stats[read]["calls"] == 2
        assert ("cmdstat_hgetall" in stats) == (protocol == 2)


def test_an_async_read_of_a_key_of_another_type_raises_as_before(single):
    counter = Counter("async wrong type", precisions=[60], samples=10)
    get_redis_connection().set(counter.key(60), "x")
    assert raised(lambda: counter.arecent(60, until=T0))[0] is ResponseError
    assert "WRONGTYPE" in raised(lambda: counter.aseries(60))[1]


def test_an_async_user_refused_transactions_reads_the_same(single, metrics_settings, redis_server):
    counter = scattered("async no transactions")
    expected = counter.recent(1, None, T0 + 99), counter.series(1)
    admin = redis_server.client()
    try:
        metrics_settings(CONNECTION=reader_without_transactions(admin, "areader", single.url))
        assert areads(counter, 1, None, T0 + 99) == expected
        assert areads(counter, 1, None, T0 + 99) == expected  # the steps' way from now on
    finally:
        admin.acl_deluser("areader")
