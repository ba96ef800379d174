"""Retention at write time: a counter stays within its samples, and in Redis's compact encoding,
with no cleaner running; every key carries a TTL; old backfills are not kept; a clock far ahead
is refused with nothing written."""

from __future__ import annotations

import random
import time
from functools import partial

import pytest

from django_redis_metrics import Batch, Counter
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.core.scripts import MetricsRefused
from django_redis_metrics.counter.cleaner import clean_counters

from ..racing import race

T0 = 1_700_000_040  # a multiple of 60


def fields(backend, counter: Counter, precision: int) -> list[int]:
    return sorted(int(f) for f in backend.client.hkeys(counter.key(precision)))


def dumps(backend) -> dict[str, bytes]:
    return {key: backend.client.dump(key) for key in backend.keys()}


def test_each_precision_keeps_its_samples_as_it_is_written(backend):
    counter = Counter("steady", precisions=[1, 5, 60], samples=10)
    with Batch() as batch:
        for second in range(1000):
            counter.incr(when=T0 + second, batch=batch)
    head = T0 + 999
    for precision in (1, 5, 60):
        newest = head // precision * precision
        expected = [newest - precision * i for i in range(9, -1, -1)]
        assert fields(backend, counter, precision) == [s for s in expected if s >= T0]
        assert backend.client.object("encoding", counter.key(precision)) in (
            b"listpack",
            "listpack",
        )
    assert counter.series(1) == [(head - 9 + i, 1) for i in range(10)]
    assert counter.series(60)[-1] == (T0 + 960, 40)  # 960..999: the newest slice


def test_a_default_counter_written_every_second_for_a_day_stays_compact(single):
    counter = Counter("a day")
    for start in range(0, 86400, 3600):
        with Batch() as batch:
            for second in range(start, start + 3600):
                counter.incr(when=T0 + second, batch=batch)
    client = single.client
    keys = [counter.key(p) for p in counter.precisions]
    for key in keys:
        assert client.hlen(key) <= 120
        assert client.object("encoding", key) == b"listpack"
    used = sum(client.memory_usage(key, samples=0) for key in [*keys, counter.meta_key])
    assert used < 20_000  # 7 compact hashes; without retention: about 6.5 MB


def test_every_key_gets_a_ttl_of_its_retention(backend):
    counter = Counter("ttl", precisions=[1, 60, 3600], samples=5)
    counter.incr()
    client = backend.client
    for precision in (1, 60, 3600):  # twice the retention, refreshed once half of it passed
        ttl = client.pttl(counter.key(precision))
        assert (12 * precision - 1) * 1000 < ttl <= 12 * precision * 1000
    assert client.pttl(counter.meta_key) >= client.pttl(counter.key(3600))


def test_a_pause_longer_than_the_retention_leaves_a_fresh_hash(single):
    counter = Counter("pause", precisions=[1], samples=100)
    counter.incr_many((T0 + i, 1) for i in range(100))
    key = counter.key(1)
    counter.incr(when=T0 + 5000)
    assert counter.series(1) == [(T0 + 5000, 1)]
    assert single.client.memory_usage(key, samples=0) < 200


def test_a_short_pause_deletes_exactly_the_slices_that_fell_out(backend):
    counter = Counter("gap", precisions=[1], samples=10)
    counter.incr_many((T0 + i, 1) for i in range(10))
    counter.incr(when=T0 + 13)
    assert fields(backend, counter, 1) == [T0 + 4, T0 + 5, T0 + 6, T0 + 7, T0 + 8, T0 + 9, T0 + 13]


def test_backfills_older_than_the_retention_are_not_kept(backend):
    counter = Counter("backfill", precisions=[1, 60], samples=10)
    counter.incr(when=T0 + 600)
    counter.incr(when=T0 + 595)  # within 10 s of the newest: kept
    counter.incr(when=T0 + 100)  # 500 s before it: not at 1 s, but within 10 minutes
    counter.incr_many([(T0 + 101, 1), (T0 + 102, 1)])
    assert counter.series(1) == [(T0 + 595, 1), (T0 + 600, 1)]
    assert counter.series(60) == [(T0 + 60, 3), (T0 + 540, 1), (T0 + 600, 1)]
    counter.incr(when=T0)  # the 60 s slice 10 slices before the newest: out of every window
    assert counter.series(60) == [(T0 + 60, 3), (T0 + 540, 1), (T0 + 600, 1)]


def test_fewer_samples_trim_at_the_next_new_slice(backend):
    Counter("shrink", precisions=[1], samples=20).incr_many((T0 + i, 1) for i in range(20))
    smaller = Counter("shrink", precisions=[1], samples=5)
    smaller.incr(when=T0 + 20)
    assert fields(backend, smaller, 1) == list(range(T0 + 16, T0 + 21))


def test_a_time_ahead_of_the_redis_clock_is_refused_with_nothing_written(backend):
    counter = Counter("ahead", precisions=[1, 60])
    counter.incr()
    before = dumps(backend)
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        counter.incr(when=time.time() + MAX_AHEAD + 30)
    with pytest.raises(ValueError, match="ahead"):
        counter.incr_many([(time.time(), 1), (time.time() + 3600, 1)])
    assert dumps(backend) == before


def test_a_time_a_little_ahead_is_kept_and_moves_no_window(backend):
    counter = Counter("skew", precisions=[1], samples=10)  # room for the clock to tick
    now = int(time.time())
    counter.incr_many((now - i, 1) for i in range(5))
    counter.incr(when=now + MAX_AHEAD - 5)  # a server whose clock runs ahead
    counter.incr(when=now)
    starts = [start for start, _ in counter.series(1)]
    assert starts[:5] == [now - 4, now - 3, now - 2, now - 1, now]  # nothing of now's dropped
    assert starts[-1] == now + MAX_AHEAD - 5


def test_an_abandoned_counter_disappears_with_its_catalogue_entry(backend):
    counter = Counter("abandoned", precisions=[1], samples=1)
    counter.incr()
    assert Counter.objects.names() == ["abandoned"]
    time.sleep(4.2)  # its retention is 1 slice of 1 s, its TTL twice (1 + 1) s
    assert backend.keys() == [] or all(key.endswith(":catalogue:counter") for key in backend.keys())
    assert Counter.objects.names() == []  # reading the catalogue forgets it
    clean_counters()  # and the cleaner does not bring it back
    assert Counter.objects.names() == []
    assert backend.keys() == []


def test_writers_racing_each_other_and_the_cleaner_keep_exactly_the_window(backend):
    """Four writers share a counter's slices, each second by second through 400 seconds (more
    than twice its samples), while the cleaner passes again and again at the newest second: no
    increment to a slice of the final window is lost, and nothing older is left."""
    precisions, samples, span, writers = (1, 5, 60), 50, 400, 4
    head = T0 + span - 1

    def write(seed: int) -> None:
        rng = random.Random(seed)
        for second in range(span):
            Counter("shared", precisions, samples).incr(when=T0 + second)
            if rng.random() < 0.05:
                time.sleep(0.001)

    # The cleaner agrees with the writers' window: it cleans at the newest second.
    race([partial(write, seed) for seed in range(writers)], partial(clean_counters, now=head))
    counter = Counter("shared", precisions, samples)
    for precision in precisions:
        newest = head // precision * precision
        window = [newest - precision * i for i in range(samples - 1, -1, -1)]
        expected = [(s, writers * min(precision, head + 1 - s)) for s in window if s >= T0]
        assert counter.series(precision) == expected
