"""Counter reads: ``recent`` reads a small window whole (HGETALL) when it asks for at least half
of it, else looks its slices up (HMGET); both give the same answer, fields outside the window
(newer than ``until``, older than its first slice) left out."""

from __future__ import annotations

import random

import pytest

from django_redis_metrics import Counter
from django_redis_metrics.core.drive import drive

T0 = 1_700_000_000  # a fixed epoch second, far behind any clock: no write is ahead


def looked_up(counter: Counter, precision: int, count: int, until: float) -> list[tuple[int, int]]:
    """``recent`` as the per-slice lookup (HMGET) answers it, for comparison."""
    found = drive(counter._recent_steps_of(precision, count, until, counter.MAX_RECENT, 1000))
    return [(start, int(value) if value is not None else 0) for start, value in found]


def test_whole_read_and_lookup_agree_on_every_window(backend):
    rng = random.Random(23)
    counter = Counter("reads", precisions=[1, 5, 60], samples=40)
    for _ in range(400):
        counter.incr(rng.randint(-3, 9), when=T0 + rng.uniform(0, 240))
    for precision in (1, 5, 60):
        for count in (1, 7, 19, 20, 21, 39, 40, None):
            for until in (T0 + 100, T0 + 239.5, T0 + 250, T0 - 1):
                window = counter.recent(precision, count, until=until)
                assert window == looked_up(counter, precision, count or 40, until)
                assert len(window) == (count or 40)


def test_whole_read_reports_zeros_and_skips_fields_outside_the_window(backend):
    counter = Counter("edges", precisions=[10], samples=6)
    for offset, count in ((0, 1), (10, 2), (30, 3), (50, 4)):
        counter.incr(count, when=T0 + offset)
    # The hash holds 0, 10, 30, 50: a window up to T0 + 35 of 4 slices leaves 0 and 50 out.
    assert counter.recent(10, 4, until=T0 + 35) == [
        (T0, 1),
        (T0 + 10, 2),
        (T0 + 20, 0),
        (T0 + 30, 3),
    ]
    assert counter.recent(10, until=T0 + 59) == [
        (T0, 1),
        (T0 + 10, 2),
        (T0 + 20, 0),
        (T0 + 30, 3),
        (T0 + 40, 0),
        (T0 + 50, 4),
    ]


def test_recent_adds_a_labelled_counters_series_in_both_reads(backend):
    counter = Counter("labelled reads", precisions=[60], samples=10, labels=("view",))
    counter.labels(view="a").incr(2, when=T0)
    counter.labels(view="b").incr(3, when=T0 + 61)
    whole = counter.recent(60, 10, until=T0 + 61)  # whole hashes read
    assert whole[-2:] == [(T0 // 60 * 60, 2), (T0 // 60 * 60 + 60, 3)]
    assert sum(c for _, c in counter.recent(60, 2, until=T0 + 61)) == 5  # slices looked up


@pytest.mark.parametrize("count", [0, -1, 100_001, True, 2.0])
def test_bad_counts_are_refused_as_before(backend, count):
    counter = Counter("bad reads", precisions=[1], samples=40)
    with pytest.raises((TypeError, ValueError), match=r"count|slices"):
        counter.recent(1, count, until=T0)


@pytest.mark.parametrize("samples", [40, 1000, 1500])
def test_series_reads_the_whole_hash_or_scans_a_long_one(backend, samples):
    """Up to 1,000 samples the hash is read whole (HGETALL), beyond in HSCAN steps: the same
    stored slices either way, oldest first."""
    counter = Counter(f"series {samples}", precisions=[1], samples=samples)
    counter.incr_many((T0 + i, i % 7 + 1) for i in range(samples + 10))
    expected = [(T0 + i, i % 7 + 1) for i in range(10, samples + 10)]
    assert counter.series(1) == expected
