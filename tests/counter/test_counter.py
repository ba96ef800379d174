"""Counter against the seed's own listings, and its API on a single node and on the cluster."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest

from django_redis_metrics import Batch, Counter
from django_redis_metrics.counter.cleaner import clean_counters

from . import redis_in_action as seed

DEFAULTS = tuple(seed.PRECISION)
T0 = 1_700_000_000  # a fixed epoch second


def random_increments(rng: random.Random, count: int, span: float) -> list[tuple[float, int]]:
    return [(T0 + rng.uniform(0, span), rng.randint(1, 5)) for _ in range(count)]


def retained(series: list[tuple[int, int]], precision: int, samples: int = 120):
    """The newest ``samples`` slices up to the newest one written: what write-time retention
    keeps of the seed's (unbounded) series, whatever order the increments came in."""
    head = max((start for start, _ in series), default=0)
    return [(start, count) for start, count in series if start > head - samples * precision]


@pytest.mark.parametrize("span", [30, 4000, 3 * 86400])
def test_incr_and_series_reproduce_the_seed(backend, redis_server, span):
    """Listings 5.3/5.4 and Counter.incr/series agree on the same random increments (in
    random order), the seed's series cut to the retention the counter enforces as it writes."""
    rng = random.Random(span)
    reference, ns = redis_server.client(), f"seed-{uuid.uuid4().hex}:"
    counter = Counter("site hits")
    for when, count in random_increments(rng, 300, span):
        seed.update_counter(reference, ns, "site hits", count, now=when)
        counter.incr(count, when=when)
    for precision in DEFAULTS:
        expected = retained(seed.get_counter(reference, ns, "site hits", precision), precision)
        assert counter.series(precision) == expected
        assert all(isinstance(v, int) for pair in expected for v in pair)
    assert len(counter.series(1)) < 300 if span > 120 else True  # the 1 s precision was cut


def test_cleanup_reproduces_the_seed(backend, redis_server):
    """Listing 5.5 (one pass) and clean_counters leave the same samples and catalogue."""
    rng = random.Random(7)
    reference, ns = redis_server.client(), f"seed-{uuid.uuid4().hex}:"
    names = ["a", "b", "c"]
    for when, count in random_increments(rng, 400, 20 * 86400):
        name = rng.choice(names)
        seed.update_counter(reference, ns, name, count, now=when)
        Counter(name).incr(count, when=when)
    # "old" is only written long before the cutoff of every precision: both must forget it.
    seed.update_counter(reference, ns, "old", 1, now=T0 - 400 * 86400)
    Counter("old").incr(when=T0 - 400 * 86400)
    now = T0 + 20 * 86400 + 17
    for passes in (0, 1, 5, 60):
        seed.clean_counters_once(reference, ns, now, passes)
        clean_counters(now=now, passes=passes)
        for name in [*names, "old"]:
            for precision in DEFAULTS:
                expected = seed.get_counter(reference, ns, name, precision)
                assert Counter(name).series(precision) == expected
        seed_names = {entry.partition(":")[2] for entry in seed.known(reference, ns)}
        assert set(Counter.objects.names()) == seed_names
    assert "old" not in Counter.objects.names()
    assert Counter("a").series(86400)  # the daily samples are all within 120 days
    assert "a" in Counter.objects.names()


def test_recent_is_zero_filled_up_to_now(backend):
    counter = Counter("recent", precisions=[5, 60], samples=10)
    counter.incr(2, when=T0 + 1)
    counter.incr(3, when=T0 + 11)
    window = counter.recent(5, 4, until=T0 + 12)
    starts = [s for s, _ in window]
    assert starts == [T0 - 5, T0, T0 + 5, T0 + 10]
    assert [c for _, c in window] == [0, 2, 0, 3]
    assert len(counter.recent(60)) == 10  # default: `samples` slices
    assert counter.recent(60, 1, until=T0 + 12) == [((T0 + 12) // 60 * 60, 5)]


def test_when_accepts_aware_datetimes_in_any_zone(backend):
    counter = Counter("tz", precisions=[1])
    moment = datetime(2024, 3, 31, 1, 30, tzinfo=UTC)
    counter.incr(when=moment)
    counter.incr(when=moment.astimezone(timezone(timedelta(hours=-7))))
    assert counter.series(1) == [(int(moment.timestamp()), 2)]


def test_incr_many_sums_per_slice_and_matches_single_increments(backend):
    rng = random.Random(3)
    increments = random_increments(rng, 2000, 7200)
    bulk, single = Counter("bulk"), Counter("single")
    assert bulk.incr_many(increments) == 1
    for when, count in increments:
        single.incr(count, when=when)
    for precision in DEFAULTS:
        assert bulk.series(precision) == single.series(precision)


def test_incr_many_splits_huge_imports_into_bounded_calls(backend, monkeypatch):
    monkeypatch.setattr(Counter, "MAX_PAIRS_PER_CALL", 50)
    counter = Counter("import", precisions=[1, 60])
    calls = counter.incr_many((T0 + i, 1) for i in range(120))
    assert calls == 3  # 120 + 2 slice pairs, in chunks of 50
    assert counter.total(60) == 120
    assert len(counter.series(1)) == 120


def test_batch_sends_many_counters_together(backend):
    with Batch() as batch:
        for name in ("x", "y", "z"):
            Counter(name, precisions=[60]).incr(4, when=T0, batch=batch)
        assert Counter("x", precisions=[60]).series(60) == []  # nothing sent yet
    for name in ("x", "y", "z"):
        assert Counter(name, precisions=[60]).series(60) == [(T0 // 60 * 60, 4)]
    assert Counter.objects.names() == ["x", "y", "z"]


def test_objects_lists_known_counters_with_their_configuration(backend):
    Counter("b", precisions=[60, 3600], samples=24).incr(when=T0)
    Counter("a").incr(when=T0)
    counters = Counter.objects.all()
    assert [c.name for c in counters] == ["a", "b"]
    assert counters[1].precisions == (60, 3600)
    assert counters[1].samples == 24
    assert Counter.objects.get("b").precisions == (60, 3600)
    with pytest.raises(LookupError):
        Counter.objects.get("missing")


def test_per_counter_and_settings_defaults(backend, settings):
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "COUNTER_PRECISIONS": [10, 20],
        "COUNTER_SAMPLES": 3,
    }
    declared_before_override = Counter("late")
    assert declared_before_override.precisions == (10, 20)
    assert declared_before_override.samples == 3
    assert Counter("own", precisions=[7], samples=9).precisions == (7,)


def test_delete_removes_every_key(backend):
    counter = Counter("gone")
    counter.incr(when=T0)
    Counter("kept").incr(when=T0)
    counter.delete()
    assert Counter.objects.names() == ["kept"]
    assert not [k for k in backend.keys() if "{gone}" in k]
    assert not counter.exists()


def test_names_with_separators_never_share_keys(backend):
    """Names that look like key parts stay apart: braces delimit the name."""
    odd = ["a:1", "a", "1:a", "a:meta", "meta", "counter:a"]
    for index, name in enumerate(odd, start=1):
        Counter(name, precisions=[1]).incr(index, when=T0)
    for index, name in enumerate(odd, start=1):
        assert Counter(name, precisions=[1]).series(1) == [(T0, index)]
    assert Counter.objects.names() == sorted(odd)


def test_every_key_of_a_counter_shares_one_cluster_slot(backend):
    from redis.cluster import key_slot

    Counter("slotted").incr(when=T0)
    Counter("elsewhere").incr(when=T0)
    keys = [k for k in backend.keys() if "{slotted}" in k]
    assert len(keys) == 1 + len(DEFAULTS)  # the meta hash and one hash per precision
    assert len({key_slot(k.encode()) for k in keys}) == 1
    others = {key_slot(k.encode()) for k in backend.keys() if "{elsewhere}" in k}
    assert len(others) == 1


def test_series_reads_a_counter_holding_thousands_of_samples(backend):
    counter = Counter("untrimmed", precisions=[1], samples=3000)
    counter.incr_many((T0 + i, i % 7 + 1) for i in range(3000))  # a hashtable, not a listpack
    series = counter.series(1)
    assert len(series) == 3000
    assert series == [(T0 + i, i % 7 + 1) for i in range(3000)]


def test_recent_reads_long_windows_in_chunks_and_refuses_huge_ones(backend):
    counter = Counter("long", precisions=[1])
    counter.incr(when=T0 - 2400)
    window = counter.recent(1, 2500, until=T0)
    assert len(window) == 2500
    assert window[99] == (T0 - 2400, 1)
    assert sum(count for _, count in window) == 1
    with pytest.raises(ValueError, match="at most 100000 slices"):
        counter.recent(1, 100_001)
