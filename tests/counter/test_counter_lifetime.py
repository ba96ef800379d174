"""A counter's lifetime total: the net sum of every increment since it was created, kept apart
from its slices, so trimming, chunking, refusals, racing writers and the cleaner leave it exact."""

from __future__ import annotations

import random
import time
from functools import partial

import pytest

from django_redis_metrics import Counter
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.core.scripts import MetricsRefused
from django_redis_metrics.counter.cleaner import clean_counters
from django_redis_metrics.counter.model import LIFETIME_FIELD

from ..racing import race

T0 = 1_700_000_040  # a multiple of 60


def dumps(backend) -> dict[str, bytes]:
    return {key: backend.client.dump(key) for key in backend.keys()}


def test_a_counter_never_written_has_a_lifetime_total_of_zero(backend):
    assert Counter("never").lifetime_total() == 0


def test_the_lifetime_total_sums_every_increment_far_beyond_the_samples(backend):
    """1,000 seconds of writes into 5 samples: the slices keep the last few, the total all."""
    counter = Counter("life", precisions=[1, 60], samples=5)
    rng = random.Random(7)
    expected = 0
    for second in range(0, 1000, 3):
        count = rng.randint(-3, 9)  # negative increments count too: the total is a net sum
        counter.incr(count, when=T0 + second)
        expected += count
    spread = [(T0 + 1000 + rng.randint(0, 600), rng.randint(1, 5)) for _ in range(300)]
    counter.incr_many(spread)
    expected += sum(count for _, count in spread)
    assert len(counter.series(1)) <= 5 and len(counter.series(60)) <= 5
    assert counter.total(60) != expected  # the slices forgot most of it
    assert counter.lifetime_total() == expected


def test_incr_many_chunks_add_each_increment_once(backend, monkeypatch):
    monkeypatch.setattr(Counter, "MAX_PAIRS_PER_CALL", 7)
    counter = Counter("chunked", precisions=[1, 5, 60])
    increments = [(T0 + i, i + 1) for i in range(50)] + [(T0 + 3, 1000)]
    calls = counter.incr_many(increments)
    assert calls == 9  # 50 + 10 + 1 pairs by 7: chunks mixing precisions, some without 1 s
    assert counter.lifetime_total() == sum(count for _, count in increments)
    assert counter.total(60) == counter.lifetime_total()  # all within the retention here


def test_a_lifetime_total_beyond_float_precision_stays_exact(backend):
    """Past 2**52 the script adds with HINCRBY rather than in a Lua number (a double)."""
    counter = Counter("huge", precisions=[1])
    counter.incr(when=T0)
    backend.client.hset(counter.meta_key, LIFETIME_FIELD, 2**60 + 1)
    counter.incr(3, when=T0 + 1)  # opens a slice
    counter.incr(5, when=T0 + 1)  # increments an existing one
    assert counter.lifetime_total() == 2**60 + 9


@pytest.mark.parametrize("new_slice", [True, False], ids=["opening a slice", "existing slice"])
def test_a_lifetime_total_that_would_overflow_refuses_the_write_with_nothing_written(
    backend, new_slice
):
    counter = Counter("brim", precisions=[1, 60])
    counter.incr(when=T0)
    backend.client.hset(counter.meta_key, LIFETIME_FIELD, 2**63 - 10)
    before = dumps(backend)
    with pytest.raises(MetricsRefused, match="lifetime total"):
        counter.incr(20, when=T0 + 1 if new_slice else T0)
    assert dumps(backend) == before


def test_refused_writes_leave_the_lifetime_total_unchanged(backend):
    counter = Counter("refused", precisions=[1, 60, 86400])
    counter.incr(4, when=T0)
    backend.client.hset(counter.key(86400), T0 // 86400 * 86400, 2**63 - 10)
    before = dumps(backend)
    with pytest.raises(MetricsRefused, match="would overflow"):
        counter.incr(20, when=T0 + 1)  # the 1 s and 60 s slices succeed first, then day fails
    with pytest.raises(MetricsRefused, match="would overflow"):
        counter.incr(20, when=T0)  # the same, on slices that all exist
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        counter.incr_many([(T0 + 2, 1), (T0 + 10**6 * 1000, 1)])
    assert dumps(backend) == before
    assert counter.lifetime_total() == 4


def test_racing_writers_add_up_exactly(backend):
    """Four writers share a counter through 300 seconds (beyond its 20 samples) while the
    cleaner passes again and again: the lifetime total is exactly what they added."""
    precisions, samples, span, writers = (1, 60), 20, 300, 4
    counts = {seed: random.Random(seed).choices(range(-2, 10), k=span) for seed in range(writers)}

    def write(seed: int) -> None:
        counter = Counter("racing", precisions, samples)
        for second, count in enumerate(counts[seed]):
            if second % 50 == 49:
                counter.incr_many([(T0 + second, count), (T0 + second - 1, 0)])
            else:
                counter.incr(count, when=T0 + second)

    race([partial(write, seed) for seed in range(writers)], partial(clean_counters, now=T0 + span))
    expected = sum(sum(values) for values in counts.values())
    assert Counter("racing", precisions, samples).lifetime_total() == expected


def test_the_cleaner_keeps_field_t_while_the_counter_lives(backend):
    """The cleaner trims and compacts slices; it must leave the meta hash's field ``t`` (the
    lifetime total) alone for as long as the counter holds any slice."""
    counter = Counter("cleaned", precisions=[1, 60], samples=30)
    counter.incr_many([(T0 + i, 2) for i in range(30)])
    clean_counters(now=T0 + 45)  # trims half the 1 s slices and compacts that hash
    assert [start for start, _ in counter.series(1)] == list(range(T0 + 16, T0 + 30))
    assert counter.lifetime_total() == 60
    clean_counters(now=T0 + 100)  # empties the 1 s hash; the 60 s slice keeps the counter
    assert counter.series(1) == [] and counter.series(60) == [(T0, 60)]
    assert counter.lifetime_total() == 60
    assert backend.client.hget(counter.meta_key, LIFETIME_FIELD) in (b"60", "60")


def test_lifetime_total_reads_share_a_pipeline(backend):
    counters = [Counter(f"shared {i}", precisions=[60]) for i in range(3)]
    for index, counter in enumerate(counters[:2]):
        counter.incr(10 + index, when=T0)
    pipe = backend.client.pipeline(transaction=False)
    queued = []
    for counter in counters:
        commands, parse = counter.lifetime_total_reads()
        start = len(pipe)
        for command, args in commands:
            getattr(pipe, command)(*args)
        queued.append((start, len(commands), parse))
    replies = pipe.execute()
    totals = [parse(replies[start : start + n]) for start, n, parse in queued]
    assert totals == [10, 11, 0]


def test_a_write_within_the_allowed_clock_skew_counts(backend):
    counter = Counter("skewed", precisions=[1])
    counter.incr(2)
    counter.incr(3, when=time.time() + MAX_AHEAD - 5)
    assert counter.lifetime_total() == 5


def test_a_refused_write_of_zero_is_undone_too(backend):
    """Undoing a count of 0 adds "0", not "-0" (which Redis refuses, leaving the write half
    done and a raw error)."""
    counter = Counter("zero", precisions=[1, 86400])
    counter.incr(when=T0)
    backend.client.hset(counter.key(86400), T0 // 86400 * 86400, 2**63 - 10)
    before = dumps(backend)
    with pytest.raises(MetricsRefused, match="would overflow"):
        counter.incr_many([(T0 + 1, 0), (T0 + 2, 20)])
    assert dumps(backend) == before
