"""Gauge: the latest value by time whatever the order of arrival, last/min/max per slice, and
writes like a counter's (one round trip, retention, deferred, catalogued, deleted)."""

from __future__ import annotations

import math
import random
import time
from decimal import Decimal
from functools import partial

import pytest

from django_redis_metrics import Batch, Gauge, flush
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.core.scripts import MetricsRefused
from django_redis_metrics.gauge.cleaner import clean_gauges

from ..racing import race

T0 = 1_700_000_040  # a multiple of 60


def test_get_is_the_value_of_the_latest_time_not_the_latest_arrival(backend):
    gauge = Gauge("queue", precisions=[1, 60], samples=100)
    assert gauge.get() is None
    gauge.set(5, when=T0 + 10)
    gauge.set(9, when=T0 + 3)  # a backfill: stored in its slice, not the latest
    assert gauge.get() == 5
    assert gauge.latest() == (T0 + 10, 5)
    gauge.set(Decimal("2.5"), when=T0 + 10)  # the same time: the one set last wins
    assert gauge.get() == 2.5
    gauge.set(-1, when=T0 + 11.5)
    assert gauge.get() == -1


def test_series_gives_last_min_and_max_per_slice(backend):
    gauge = Gauge("disk", precisions=[1, 60], samples=100)
    for when, value in [(T0 + 5, 10), (T0 + 50, 3), (T0 + 20, 40), (T0 + 61, 7), (T0 + 5.5, 1)]:
        gauge.set(value, when=when)
    assert gauge.series(60) == [
        (T0, {"last": 3, "min": 1, "max": 40}),  # last by time: T0 + 50, not T0 + 20
        (T0 + 60, {"last": 7, "min": 7, "max": 7}),
    ]
    assert gauge.series(1)[0] == (T0 + 5, {"last": 1, "min": 1, "max": 10})
    assert [start for start, _ in gauge.series(1)] == [T0 + 5, T0 + 20, T0 + 50, T0 + 61]


def test_retention_ttls_and_old_backfills(backend):
    gauge = Gauge("kept", precisions=[1, 60], samples=10)
    gauge.set(1, when=T0 + 600)
    gauge.set(2, when=T0 + 100)  # out of the 1 s window, within the 60 s one
    gauge.set(3, when=T0)  # out of every window
    assert [start for start, _ in gauge.series(1)] == [T0 + 600]
    assert [start for start, _ in gauge.series(60)] == [T0 + 60, T0 + 600]
    assert gauge.get() == 1
    fresh = Gauge("ttl", precisions=[1, 60], samples=5)
    fresh.set(1)
    for precision in (1, 60):
        ttl = backend.client.pttl(fresh.key(precision))
        assert (12 * precision - 1) * 1000 < ttl <= 12 * precision * 1000
    assert backend.client.pttl(fresh.meta_key) >= backend.client.pttl(fresh.key(60))


def test_a_default_gauge_set_every_second_for_an_hour_stays_within_its_samples(single):
    gauge = Gauge("load")
    with Batch() as batch:
        for second in range(3600):
            gauge.set(second % 17, when=T0 + second, batch=batch)
    for precision in gauge.precisions:
        assert single.client.hlen(gauge.key(precision)) <= 120
    assert gauge.get() == 3599 % 17


def test_a_time_ahead_of_the_redis_clock_is_refused_with_nothing_written(backend):
    gauge = Gauge("ahead", precisions=[1, 60])
    gauge.set(1)
    before = {key: backend.client.dump(key) for key in backend.keys()}
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        gauge.set(2, when=time.time() + MAX_AHEAD + 30)
    assert {key: backend.client.dump(key) for key in backend.keys()} == before
    assert gauge.get() == 1


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (True, TypeError),
        ("3", TypeError),
        ([1], TypeError),
        (math.nan, ValueError),
        (math.inf, ValueError),
        (Decimal("-Infinity"), ValueError),
        (2**60, ValueError),
    ],
)
def test_bad_values_raise_and_write_nothing(backend, value, error):
    gauge = Gauge("bad", precisions=[1])
    with pytest.raises(error, match="value must be"):
        gauge.set(value)
    with pytest.raises(error, match="value must be"):
        gauge.set(value, defer=True)
    assert flush()
    assert backend.keys() == []


def test_set_is_one_round_trip_and_deferred_sets_arrive_with_flush(backend, round_trips):
    gauge = Gauge("trips")
    gauge.set(1)
    assert round_trips(lambda: gauge.set(2)) == 1
    assert round_trips(gauge.get) == 1
    commands, parse = gauge.latest_reads()
    client = backend.client
    assert parse([getattr(client, name)(*args) for name, args in commands]) == gauge.latest()
    later = Gauge("later", precisions=[60], samples=10)
    later.set(4, when=T0, defer=True)
    later.set(6, when=T0 + 1, defer=True)
    assert flush()
    assert later.series(60) == [(T0, {"last": 6, "min": 4, "max": 6})]


def test_racing_writers_keep_the_latest_time_and_every_extreme(backend):
    """Four writers set values at shuffled times while the cleaner passes: the latest value is
    the one of the latest time, and each slice's min and max cover every value set in it."""
    writers, span = 4, 120
    plans = []
    for seed in range(writers):
        rng = random.Random(seed)
        plan = [(T0 + second + seed / 10, seed * 1000 + second) for second in range(span)]
        rng.shuffle(plan)
        plans.append(plan)

    def write(plan: list[tuple[float, int]]) -> None:
        gauge = Gauge("shared", precisions=[1, 60], samples=200)
        for when, value in plan:
            gauge.set(value, when=when)

    race([partial(write, plan) for plan in plans], partial(clean_gauges, now=T0 + span))
    gauge = Gauge("shared", precisions=[1, 60], samples=200)
    assert gauge.latest() == (T0 + span - 1 + 0.3, 3000 + span - 1)
    assert gauge.series(60) == [
        (T0, {"last": 3059, "min": 0, "max": 3059}),
        (T0 + 60, {"last": 3119, "min": 60, "max": 3119}),
    ]
    assert len(gauge.series(1)) == span


def test_objects_delete_and_the_cleaner(backend):
    Gauge("old", precisions=[1, 60], samples=5).set(1, when=T0)
    Gauge("new", precisions=[60], samples=5).set(2, when=T0 + 3600)
    assert Gauge.objects.names() == ["new", "old"]
    assert Gauge.objects.get("old").precisions == (1, 60)
    report = clean_gauges(now=T0 + 3600)
    assert report.metrics_removed == ["old"]
    assert not Gauge("old").exists() and Gauge("old").get() is None
    Gauge("new").delete()
    assert backend.keys() == [] or backend.keys() == [f"{backend.prefix}:catalogue:gauge"]
    assert Gauge.objects.names() == []
