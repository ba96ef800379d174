"""Merging slices (``histogram.merge``/``parse_merged``): a window of many slices summarised as
one equals a plain computation over all their values, quantiles within the stated bound."""

from __future__ import annotations

import itertools
import math
import statistics

from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from django_redis_metrics import Batch, Statistic
from django_redis_metrics.core.connection import get_redis_connection
from django_redis_metrics.statistic.histogram import empty, merge, parse_merged

from .test_statistic import exact_quantile, within_bound

T0 = 1_700_000_040  # a multiple of 60
names = itertools.count()

values = st.one_of(
    st.integers(-(10**5), 10**5),
    st.floats(-1e5, 1e5, allow_nan=False, allow_infinity=False),
)
records = st.lists(st.tuples(values, st.integers(0, 10 * 60 - 1)), min_size=1, max_size=80)


@hypothesis_settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=records)
def test_merged_slices_equal_a_plain_computation_over_all_values(backend, records):
    stat = Statistic(f"m{next(names)}", precisions=[60], samples=100)
    with Batch() as batch:
        for value, offset in records:
            stat.record(value, when=T0 + offset, batch=batch)
    starts = [T0 + 60 * i for i in range(10)]
    texts = get_redis_connection().hmget(stat.key(60), starts)
    merged = parse_merged(texts)
    found = [float(value) for value, _ in records]
    scale = max(1.0, *map(abs, found))
    assert merged["count"] == len(found)
    assert merged["min"] == min(found) and merged["max"] == max(found)
    assert math.isclose(merged["sum"], math.fsum(found), rel_tol=1e-9, abs_tol=1e-6)
    assert math.isclose(merged["mean"], statistics.fmean(found), abs_tol=1e-9 * scale)
    if len(found) < 2:
        assert merged["stddev"] is None
    else:
        exact = statistics.stdev(found)
        assert math.isclose(merged["stddev"], exact, rel_tol=1e-6, abs_tol=1e-6 * scale)
    for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        assert within_bound(merged[name], exact_quantile(found, q)), (name, found)


def test_merging_nothing_or_empty_slices_is_an_empty_summary():
    assert merge([]) is None
    assert parse_merged([]) == empty()
    assert parse_merged([None, None]) == empty()
