"""Statistics as Prometheus histograms: cumulative ``_bucket{le}``, ``_sum`` and ``_count``
from each series' lifetime histogram, so ``histogram_quantile`` works across scrapes and
series; computed here as Prometheus computes it, against the exact quantiles written."""

from __future__ import annotations

import math
import random
from collections.abc import Iterable

import pytest
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)

from django_redis_metrics import Statistic
from django_redis_metrics.statistic.exposition import QUANTILE_ERROR
from django_redis_metrics.statistic.histogram import rank

from .scraping import NS, families, scrape

pytestmark = pytest.mark.django_db

Buckets = list[tuple[float, float]]


def histogram_quantile(q: float, buckets: Buckets) -> float:
    """Prometheus' ``histogram_quantile`` (promql/quantile.go, ``bucketQuantile``) over
    cumulative ``(le, count)`` pairs sorted by ``le``, the last one ``+Inf``."""
    assert buckets[-1][0] == math.inf
    rank_ = q * buckets[-1][1]
    b = next(i for i, (_, count) in enumerate(buckets[:-1]) if count >= rank_)
    start, end, count = 0.0, buckets[b][0], buckets[b][1]
    if b == 0 and end <= 0:
        return end
    if b > 0:
        start = buckets[b - 1][0]
        count -= buckets[b - 1][1]
        rank_ -= buckets[b - 1][1]
    return start + (end - start) * (rank_ / count)


def served(url: str, name: str) -> dict[tuple[tuple[str, str], ...], dict[str, object]]:
    """Each series of histogram ``name``: its ``buckets`` (sorted ``(le, count)``), ``count``
    and ``sum``, by its labels (``le`` aside)."""
    family = families(url)[f"{NS}_{name}"]
    assert family.type == "histogram"
    found: dict[tuple[tuple[str, str], ...], dict[str, object]] = {}
    for s in family.samples:
        labels = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
        entry = found.setdefault(labels, {"buckets": []})
        if s.name.endswith("_bucket"):
            entry["buckets"].append((float(s.labels["le"]), s.value))  # type: ignore[attr-defined]
        else:
            entry[s.name.rpartition("_")[2]] = s.value
    for entry in found.values():
        entry["buckets"] = sorted(entry["buckets"])  # type: ignore[type-var]
    return found


def summed(series: Iterable[Buckets]) -> Buckets:
    """``sum by (le)`` of several series' buckets: every series of a metric is served with
    the same ``le`` bounds (the bounds of all of them), so the sums are cumulative too."""
    total: dict[float, float] = {}
    for buckets in series:
        for le, count in buckets:
            total[le] = total.get(le, 0.0) + count
    return sorted(total.items())


def exact(q: float, values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[rank(q, len(ordered)) - 1]


QS = (0.1, 0.5, 0.9, 0.95, 0.99, 0.999)


def test_histogram_quantile_lands_within_the_stated_bound(exposition: str) -> None:
    rng = random.Random(20)
    values = [rng.lognormvariate(3, 1.2) for _ in range(2_000)]
    latency = Statistic("latency", precisions=[60])
    latency.record_many(values[:1_000])
    for value in values[1_000:]:
        latency.record(value, when=500)  # old slices, trimmed: still in the lifetime one
    (entry,) = served(exposition, "latency").values()
    buckets: Buckets = entry["buckets"]  # type: ignore[assignment]
    assert entry["count"] == len(values) == buckets[-1][1]
    assert entry["sum"] == pytest.approx(sum(values))
    counts = [count for _, count in buckets]
    assert counts == sorted(counts)  # cumulative
    assert len(buckets) < 100  # one le per bucket holding values, and a few lower bounds
    for q in QS:
        wanted = exact(q, values)
        assert abs(histogram_quantile(q, buckets) - wanted) <= QUANTILE_ERROR * wanted, q
    assert pytest.approx(0.0905, abs=1e-4) == QUANTILE_ERROR


def test_histogram_quantile_of_series_summed_by_le(exposition: str) -> None:
    """``histogram_quantile(q, sum by (le) (...))`` over the series of a labelled statistic
    (or over instances): the series share their bounds, so the sum is a histogram too."""
    rng = random.Random(7)
    latency = Statistic("latency", labels=("view",))
    written: dict[str, list[float]] = {}
    for view, mu in (("home", 2.0), ("search", 4.0), ("about", 1.0)):
        written[view] = [rng.lognormvariate(mu, 0.7) for _ in range(400)]
        latency.series_for((("view", view),)).record_many(written[view])
    found = served(exposition, "latency")
    assert set(found) == {(("view", view),) for view in written}
    for (labels,), entry in found.items():
        assert entry["count"] == 400
        for q in QS:
            got = histogram_quantile(q, entry["buckets"])  # type: ignore[arg-type]
            wanted = exact(q, written[labels[1]])
            assert abs(got - wanted) <= QUANTILE_ERROR * wanted
    everything = [value for values in written.values() for value in values]
    total = summed(entry["buckets"] for entry in found.values())  # type: ignore[misc]
    for q in QS:
        wanted = exact(q, everything)
        assert abs(histogram_quantile(q, total) - wanted) <= QUANTILE_ERROR * wanted


def test_buckets_only_grow_from_one_scrape_to_the_next(exposition: str) -> None:
    latency = Statistic("latency", precisions=[1], samples=2)
    latency.record_many([3, 5, 8, 13], when=1_000)
    before = dict(served(exposition, "latency")[()]["buckets"])  # type: ignore[call-overload]
    latency.record_many([1, 2, 1000])  # the old slice is trimmed away now
    after = dict(served(exposition, "latency")[()]["buckets"])  # type: ignore[call-overload]
    assert after[math.inf] == 7
    for le, count in before.items():
        assert after[le] >= count


def test_negative_values_and_zero_keep_their_place(exposition: str) -> None:
    values = [-40.0, -3.0, -3.0, 0.0, 0.0, 2.0, 5.0, 1e6]
    Statistic("delta").record_many(values)
    entry = served(exposition, "delta")[()]
    assert set(entry) == {"buckets"}  # no _sum (no counter then), so no _count (OpenMetrics)
    response = scrape(exposition, Accept="application/openmetrics-text; version=1.0.0")
    (family,) = [
        f for f in openmetrics_families(response.content.decode()) if f.name == f"{NS}_delta"
    ]
    assert family.type == "histogram"
    buckets: Buckets = entry["buckets"]  # type: ignore[assignment]
    cumulative = dict(buckets)
    for le, count in buckets:
        assert count == len([v for v in values if v <= le]), le
    assert cumulative[0.0] == 5
    for q in (0.1, 0.3, 0.75, 0.95):
        wanted = exact(q, values)
        got = histogram_quantile(q, buckets)
        assert abs(got - wanted) <= QUANTILE_ERROR * abs(wanted), q


def test_a_label_named_le_is_renamed(exposition: str) -> None:
    Statistic("sizes", labels=("le",)).series_for((("le", "x"),)).record(4)
    family = families(exposition)[f"{NS}_sizes"]
    assert {s.labels["exported_le"] for s in family.samples} == {"x"}
