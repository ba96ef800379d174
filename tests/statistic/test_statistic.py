"""Statistic: summaries equal a plain computation, quantiles keep their stated error bound, and
reads and writes behave like a counter's (one round trip, deferred, catalogued, deleted)."""

from __future__ import annotations

import itertools
import math
import random
import statistics
import time
from collections import defaultdict
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from django_redis_metrics import Batch, Statistic, flush
from django_redis_metrics.core.keys import catalogue_key
from django_redis_metrics.statistic.histogram import RELATIVE_ERROR, rank

from ..roundtrips import nodes_of

T0 = 1_700_000_040  # a multiple of 60
names = itertools.count()

values = st.one_of(
    st.integers(-(10**6), 10**6),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False),
    st.decimals(-(10**6), 10**6, allow_nan=False, allow_infinity=False, places=3),
)
records = st.lists(st.tuples(values, st.integers(0, 3 * 3600 - 1)), min_size=1, max_size=60)


def exact_quantile(found: list[float], q: float) -> float:
    return sorted(found)[rank(q, len(found)) - 1]


def within_bound(estimate: float, exact: float) -> bool:
    return abs(estimate - exact) <= RELATIVE_ERROR * abs(exact) * (1 + 1e-9) + 1e-300


@hypothesis_settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=records)
def test_summary_equals_a_plain_computation(backend, records):
    stat = Statistic(f"s{next(names)}", precisions=[60, 3600], samples=500)
    with Batch() as batch:
        for value, offset in records:
            stat.record(value, when=T0 + offset, batch=batch)
    for precision in (60, 3600):
        by_slice: dict[int, list[float]] = defaultdict(list)
        for value, offset in records:
            by_slice[(T0 + offset) // precision * precision].append(float(value))
        assert [start for start, _ in stat.series(precision)] == sorted(by_slice)
        for start, found in by_slice.items():
            summary = stat.summary(precision, start + precision - 1)
            scale = max(1.0, *map(abs, found))
            assert summary["count"] == len(found)
            assert summary["min"] == min(found) and summary["max"] == max(found)
            assert math.isclose(summary["sum"], math.fsum(found), rel_tol=1e-9, abs_tol=1e-6)
            assert math.isclose(summary["mean"], statistics.fmean(found), abs_tol=1e-9 * scale)
            if len(found) < 2:
                assert summary["stddev"] is None
            else:
                exact = statistics.stdev(found)
                assert math.isclose(summary["stddev"], exact, rel_tol=1e-6, abs_tol=1e-6 * scale)
            for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
                assert within_bound(summary[name], exact_quantile(found, q)), (name, found)


def test_quantiles_of_lognormal_latencies_keep_the_stated_bound(backend):
    rng = random.Random(11)
    stat = Statistic("latency", precisions=[60], samples=10)
    latencies = [rng.lognormvariate(3, 1.2) for _ in range(5000)]
    when = time.time()
    with Batch() as batch:
        for value in latencies:
            stat.record(value, when=when, batch=batch)
    summary = stat.summary(60, when)
    assert summary["count"] == 5000
    for q in (0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999):
        assert within_bound(stat.percentile(60, q, when), exact_quantile(latencies, q)), q
    for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        assert summary[name] == stat.percentile(60, q, when)
    # A naive estimate (the bucket's upper edge) would be off by up to 9 %: the bound is tight.
    assert RELATIVE_ERROR < 0.0434


def test_a_slice_keeps_at_most_max_buckets_and_its_high_quantiles_their_bound(backend):
    stat = Statistic("wide", precisions=[60], samples=10)
    when = time.time()
    wide = [2.0 ** (i / 8) for i in range(-400, 400)]  # 800 buckets of values
    with Batch() as batch:
        for value in wide:
            stat.record(value, when=when, batch=batch)
    text = backend.client.hget(stat.key(60), str(int(when) // 60 * 60)).decode()
    assert text.count(";") == Statistic.MAX_BUCKETS
    for q in (0.9, 0.95, 0.99):
        assert within_bound(stat.percentile(60, q, when), exact_quantile(wide, q))


def test_zero_and_negative_values_have_buckets_of_their_own(backend):
    stat = Statistic("signed", precisions=[60], samples=10)
    found = [-50.0, -2.0, -2.0, 0.0, 0.0, 0.0, 3.0, 7.5, 1000.0, 0.001]
    for value in found:
        stat.record(value, when=T0)
    summary = stat.summary(60, T0)
    assert summary["p50"] == 0.0  # exact: zero is a bucket of its own
    for q in (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 1.0):
        assert within_bound(stat.percentile(60, q, T0), exact_quantile(found, q)), q


def test_an_empty_slice_has_count_zero_and_nothing_else(backend):
    stat = Statistic("empty", precisions=[60], samples=10)
    assert stat.summary(60, T0) == {
        "count": 0,
        **dict.fromkeys(["sum", "min", "max", "mean", "stddev", "p50", "p95", "p99"]),
    }
    assert stat.percentile(60, 0.5, T0) is None
    assert stat.series(60) == []
    stat.record(4, when=T0)
    one = stat.summary(60, T0)
    assert (one["count"], one["sum"], one["mean"], one["stddev"], one["p99"]) == (1, 4, 4, None, 4)


def test_recent_is_zero_filled_up_to_until(backend):
    stat = Statistic("recent", precisions=[60], samples=10)
    stat.record(10, when=T0 + 5)
    stat.record(30, when=T0 + 70)
    found = stat.recent(60, 4, until=T0 + 125)
    assert [start for start, _ in found] == [T0 - 60, T0, T0 + 60, T0 + 120]
    assert [summary["count"] for _, summary in found] == [0, 1, 1, 0]
    assert found[1][1]["mean"] == 10 and found[3][1]["mean"] is None
    assert len(stat.recent(60)) == 10
    with pytest.raises(ValueError, match="at most"):
        stat.recent(60, Statistic.MAX_RECENT + 1)


def test_time_records_elapsed_milliseconds_even_when_the_block_raises(backend):
    stat = Statistic("timed", precisions=[60], samples=10)
    with stat.time():
        time.sleep(0.05)
    with pytest.raises(KeyError), stat.time():
        time.sleep(0.02)
        raise KeyError("boom")
    slices = [summary for _, summary in stat.series(60)]  # two if the minute turned between
    assert sum(summary["count"] for summary in slices) == 2
    assert 20 <= min(summary["min"] for summary in slices) < 1000
    assert 50 <= max(summary["max"] for summary in slices) < 1000


def test_record_is_one_round_trip_and_summary_one_read(backend, round_trips):
    stat = Statistic("trips", precisions=[60, 300, 3600, 86400])
    stat.record(1)  # on the cluster, the first write also lists the statistic
    assert round_trips(lambda: stat.record(2.5)) == 1
    # The list of its series rides along: on a cluster, to the catalogue's node, in parallel.
    reads = nodes_of(backend.client, stat.meta_key, catalogue_key("statistic"))
    assert round_trips(lambda: stat.summary(3600)) == reads
    commands, parse = stat.summary_reads(3600, time.time())
    assert [name for name, _ in commands] == ["hget"]
    client = backend.client
    assert parse([getattr(client, name)(*args) for name, args in commands]) == stat.summary(3600)


def test_deferred_records_are_delivered_by_flush(backend):
    stat = Statistic("deferred", precisions=[60], samples=10)
    stat.record(3, when=T0, defer=True)
    stat.record(Decimal("4.5"), when=T0, defer=True)
    assert flush()
    assert stat.summary(60, T0)["sum"] == 7.5
    with pytest.raises(TypeError, match="either batch= or defer=True"):
        stat.record(1, batch=Batch(), defer=True)


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (True, TypeError, "not bool"),
        ("12", TypeError, "not str"),
        (None, TypeError, "not NoneType"),
        (float("nan"), ValueError, "finite"),
        (float("inf"), ValueError, "finite"),
        (-math.inf, ValueError, "finite"),
        (Decimal("NaN"), ValueError, "finite"),
        (Decimal("sNaN"), ValueError, "finite"),
        (Decimal("1e400"), ValueError, "finite"),
        (10**400, ValueError, "finite"),
        (2**53 + 2, ValueError, "within"),
        (-1e300, ValueError, "within"),
    ],
)
def test_bad_values_raise_and_write_nothing(backend, value, error, words):
    stat = Statistic("bad", precisions=[60], samples=10)
    with pytest.raises(error, match=words):
        stat.record(value)
    with pytest.raises(error, match=words):
        stat.record(value, defer=True)
    assert flush()
    assert backend.keys() == []


def test_bad_arguments_are_clear_errors(backend):
    stat = Statistic("args", precisions=[60], samples=10)
    with pytest.raises(ValueError, match="no precision 5"):
        stat.summary(5)
    with pytest.raises(ValueError, match="q must be"):
        stat.percentile(60, 1.5)
    with pytest.raises(TypeError, match="aware datetime or epoch"):
        stat.record(1, when="now")
    with pytest.raises(TypeError, match="defer must be"):
        stat.record(1, defer=1)
    with pytest.raises(ValueError, match="samples"):
        Statistic("x", samples=0)
    assert backend.keys() == []


def test_objects_exists_and_delete(backend, settings):
    settings.DJANGO_REDIS_METRICS |= {"STATISTIC_PRECISIONS": [60, 3600], "STATISTIC_SAMPLES": 7}
    assert Statistic("defaults").precisions == (60, 3600)
    assert Statistic("defaults").samples == 7
    Statistic("a", precisions=[1, 60], samples=5).record(1)
    Statistic("b").record(2)
    assert Statistic.objects.names() == ["a", "b"]
    a = Statistic.objects.get("a")
    assert (a.precisions, a.samples) == ((1, 60), 5)
    assert a.exists()
    a.delete()
    assert not a.exists()
    assert Statistic.objects.names() == ["b"]
    assert [key for key in backend.keys() if ":{a}:" in key] == []
    with pytest.raises(LookupError, match="No statistic named 'a'"):
        Statistic.objects.get("a")


def test_totals_count_every_value_ever_recorded_apart_from_the_slices(backend):
    stat = Statistic("totals", precisions=[1], samples=2)
    assert stat.totals() == {"count": 0, "sum": 0.0}
    for second in range(10):
        stat.record(second + 0.5, when=T0 + second)
    assert len(stat.series(1)) == 2  # the slices keep their window...
    assert stat.totals() == {"count": 10, "sum": 50.0}  # ...the totals everything
    stat.delete()
    assert stat.totals() == {"count": 0, "sum": 0.0}
