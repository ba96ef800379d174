"""Retention at write time of statistics, as of counters: within samples, TTLs, old backfills
not kept, a clock far ahead refused; racing writers and the cleaner lose nothing."""

from __future__ import annotations

import time
from functools import partial

import pytest

from django_redis_metrics import Batch, Statistic
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.core.scripts import MetricsRefused
from django_redis_metrics.statistic.cleaner import clean_statistics

from ..racing import race

T0 = 1_700_000_040  # a multiple of 60


def fields(backend, stat: Statistic, precision: int) -> list[int]:
    return sorted(int(f) for f in backend.client.hkeys(stat.key(precision)))


def dumps(backend) -> dict[str, bytes]:
    return {key: backend.client.dump(key) for key in backend.keys()}


def test_each_precision_keeps_its_samples_as_it_is_written(backend):
    stat = Statistic("steady", precisions=[1, 5, 60], samples=10)
    with Batch() as batch:
        for second in range(1000):
            stat.record(second, when=T0 + second, batch=batch)
    head = T0 + 999
    for precision in (1, 5, 60):
        newest = head // precision * precision
        assert fields(backend, stat, precision) == [
            newest - precision * i for i in range(9, -1, -1)
        ]
    newest = stat.series(60)[-1]
    assert newest[0] == T0 + 960
    assert (newest[1]["count"], newest[1]["min"], newest[1]["max"]) == (40, 960, 999)


def test_every_key_gets_a_ttl_of_its_retention(backend):
    stat = Statistic("ttl", precisions=[1, 60, 3600], samples=5)
    stat.record(1)
    client = backend.client
    for precision in (1, 60, 3600):  # twice the retention, refreshed once half of it passed
        ttl = client.pttl(stat.key(precision))
        assert (12 * precision - 1) * 1000 < ttl <= 12 * precision * 1000
    assert client.pttl(stat.meta_key) >= client.pttl(stat.key(3600))


def test_backfills_older_than_the_retention_are_not_kept(backend):
    stat = Statistic("backfill", precisions=[1, 60], samples=10)
    stat.record(1, when=T0 + 600)
    stat.record(2, when=T0 + 595)  # within 10 s of the newest: kept
    stat.record(3, when=T0 + 100)  # 500 s before it: not at 1 s, but within 10 minutes
    assert [s for s, _ in stat.series(1)] == [T0 + 595, T0 + 600]
    assert [s for s, _ in stat.series(60)] == [T0 + 60, T0 + 540, T0 + 600]
    stat.record(4, when=T0)  # the 60 s slice 10 slices before the newest: out of every window
    assert [s for s, _ in stat.series(60)] == [T0 + 60, T0 + 540, T0 + 600]
    assert [summary["sum"] for _, summary in stat.series(60)] == [3, 2, 1]


def test_a_pause_longer_than_the_retention_leaves_a_fresh_hash(single):
    stat = Statistic("pause", precisions=[1], samples=100)
    with Batch() as batch:
        for i in range(100):
            stat.record(i, when=T0 + i, batch=batch)
    stat.record(7, when=T0 + 5000)
    assert [(s, summary["sum"]) for s, summary in stat.series(1)] == [(T0 + 5000, 7)]
    assert single.client.memory_usage(stat.key(1), samples=0) < 200


def test_a_time_ahead_of_the_redis_clock_is_refused_with_nothing_written(backend):
    stat = Statistic("ahead", precisions=[60, 3600])
    stat.record(1)
    before = dumps(backend)
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        stat.record(2, when=time.time() + MAX_AHEAD + 120)
    assert dumps(backend) == before


def test_a_day_of_latencies_costs_what_the_docs_say(single):
    """Default precisions and samples, a view answering every second in 20 to 400 ms: each
    slice within its documented cost (about 60 bytes plus 10 per bucket, 96 buckets at most)."""
    stat = Statistic("latency:home")
    for start in range(0, 86400, 3600):
        with Batch() as batch:
            for second in range(start, start + 3600, 3):
                stat.record(
                    20 * 20 ** ((second * 7919 % 1000) / 1000), when=T0 + second, batch=batch
                )
    client = single.client
    used = sum(client.memory_usage(stat.key(p), samples=0) for p in stat.precisions)
    slices = sum(client.hlen(stat.key(p)) for p in stat.precisions)
    longest = max(len(v) for p in stat.precisions for v in client.hvals(stat.key(p)))
    seconds = range(T0, T0 + 86400, 3)
    assert slices == sum(min(120, len({t // p for t in seconds})) for p in stat.precisions)
    assert longest <= 60 + 10 * Statistic.MAX_BUCKETS
    assert used < slices * (longest + 100)
    print(f"{slices} slices, {used} bytes, the longest slice {longest} bytes")


def test_writers_racing_each_other_and_the_cleaner_lose_nothing(backend):
    """Four writers record into the same slices while the cleaner passes again and again at the
    newest second: every record of the window is counted, once."""
    precisions, samples, span, writers = (1, 60), 50, 200, 4
    head = T0 + span - 1

    def write(seed: int) -> None:
        stat = Statistic("shared", precisions, samples)
        for second in range(span):
            stat.record(seed + 1, when=T0 + second)

    race([partial(write, seed) for seed in range(writers)], partial(clean_statistics, now=head))
    stat = Statistic("shared", precisions, samples)
    per_second = sum(range(1, writers + 1))
    assert [(s, x["count"], x["sum"]) for s, x in stat.series(1)] == [
        (s, writers, per_second) for s in range(head - samples + 1, head + 1)
    ]
    assert [(s, x["count"], x["min"], x["max"]) for s, x in stat.series(60)] == [
        (s, writers * min(60, head + 1 - s), 1, writers) for s in range(T0, head + 1, 60)
    ]


def test_the_cleaner_retires_a_statistic_nobody_writes(backend):
    old = Statistic("old", precisions=[1, 60], samples=5)
    old.record(1, when=T0)
    kept = Statistic("kept", precisions=[60], samples=5)
    kept.record(1, when=T0 + 3600)
    report = clean_statistics(now=T0 + 3600)
    assert report.metrics_removed == ["old"]
    assert Statistic.objects.names() == ["kept"]
    assert [key for key in backend.keys() if "{old}" in key] == []
    assert kept.summary(60, T0 + 3600)["count"] == 1
