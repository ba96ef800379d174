"""The cleaner of statistics and gauges (``statistic/slice_cleaning.py``): a page of metrics in a
few pipelined round trips, trimming exactly what fell out of each window."""

from __future__ import annotations

from typing import Any

import pytest

from django_redis_metrics import Gauge, Statistic
from django_redis_metrics.gauge.cleaner import clean_gauges
from django_redis_metrics.statistic import slice_cleaning
from django_redis_metrics.statistic.cleaner import clean_statistics
from django_redis_metrics.statistic.slice_cleaning import clean_sliced

from ..roundtrips import RoundTrips

T0 = 1_700_000_040  # a multiple of 60


def slices(backend: Any, key: str) -> list[int]:
    return sorted(int(field) for field in backend.client.hkeys(key))


def test_a_pass_over_many_pages_trims_each_stopped_metric_to_its_window(backend: Any) -> None:
    """Seven statistics and seven gauges written for 10 s, cleaned 15 s later three metrics a
    page: each 1 s precision keeps its last 4 slices, a dry run first counts the same and
    changes nothing."""
    stats = [Statistic(f"lat:{n}", precisions=[1, 60], samples=10) for n in range(7)]
    gauges = [Gauge(f"queue:{n}", precisions=[1, 60], samples=10) for n in range(7)]
    for second in range(10):
        for n, (stat, gauge) in enumerate(zip(stats, gauges, strict=True)):
            stat.record(n + second, when=T0 + second)
            gauge.set(n - second, when=T0 + second)
    before = {key: backend.client.dump(key) for key in backend.keys()}
    dry = clean_sliced(Statistic.KIND, now=T0 + 15, dry_run=True, batch_size=3)
    assert dry.items_removed == 7 * 6
    assert {key: backend.client.dump(key) for key in backend.keys()} == before
    report = clean_statistics(now=T0 + 15)
    assert report.items_removed == 7 * 6 and report.metrics_checked == 7
    assert clean_sliced(Gauge.KIND, now=T0 + 15, batch_size=3).items_removed == 7 * 6
    for stat, gauge in zip(stats, gauges, strict=True):
        for metric in (stat, gauge):
            assert slices(backend, metric.key(1)) == [T0 + s for s in range(6, 10)]
            assert slices(backend, metric.key(60)) == [T0]
    assert stats[3].summary(60, T0)["count"] == 10
    assert gauges[3].series(1)[-1] == (T0 + 9, {"last": -6, "min": -6, "max": -6})
    assert clean_gauges(now=T0 + 15).items_removed == 0  # nothing more fell out


def test_a_page_of_metrics_costs_a_few_round_trips_not_a_few_per_metric(
    single: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(40):
        stat = Statistic(f"view:{n}", precisions=[1, 60], samples=10)
        for second in range(10):
            stat.record(second, when=T0 + second)
    trips = RoundTrips(monkeypatch)
    taken = trips.measure(lambda: clean_statistics(now=T0 + 15))
    assert taken <= 10  # one by one, these 40 took 283
    assert all(slices(single, Statistic(f"view:{n}").key(1))[0] == T0 + 6 for n in range(40))


def test_a_field_that_names_no_slice_is_kept_and_blocks_nothing(backend: Any) -> None:
    """A stray field in one statistic's hash is left alone; every metric of the page, that one
    included, is still trimmed."""
    stats = [Statistic(name, precisions=[1], samples=10) for name in ("a", "b", "c")]
    for second in range(10):
        for stat in stats:
            stat.record(second, when=T0 + second)
    backend.client.hset(stats[1].key(1), "junk", "1")
    report = clean_statistics(now=T0 + 15)
    assert report.items_removed == 3 * 6
    assert [slices_and_junk(backend, stat.key(1)) for stat in stats] == [
        [str(T0 + s) for s in range(6, 10)],
        [*(str(T0 + s) for s in range(6, 10)), "junk"],
        [str(T0 + s) for s in range(6, 10)],
    ]


def slices_and_junk(backend: Any, key: str) -> list[str]:
    return sorted(field.decode() for field in backend.client.hkeys(key))


def test_a_round_trip_reads_a_bounded_number_of_fields(
    single: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At most 25 fields a round trip: 12 hashes of 10 fields are read in six runs of two, and
    trimmed in six more, where a pass with nothing to trim reads them in one."""
    for n in range(12):
        stat = Statistic(f"bounded:{n}", precisions=[1], samples=10)
        for second in range(10):
            stat.record(second, when=T0 + second)
    trips = RoundTrips(monkeypatch)
    monkeypatch.setattr(slice_cleaning, "FIELDS_PER_ROUND_TRIP", 25)
    bounded = trips.measure(lambda: clean_statistics(now=T0 + 15))
    monkeypatch.setattr(slice_cleaning, "FIELDS_PER_ROUND_TRIP", 10_000)
    nothing_to_trim = trips.measure(lambda: clean_statistics(now=T0 + 15))
    # 6 reads + 6 deletions + 1 compaction pipeline, against 1 read.
    assert bounded - nothing_to_trim == 6 + 6 + 1 - 1
    assert all(
        slices(single, Statistic(f"bounded:{n}").key(1)) == [T0 + s for s in range(6, 10)]
        for n in range(12)
    )
