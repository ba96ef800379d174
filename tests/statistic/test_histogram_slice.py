"""A slice's quantile read from its histogram when the buckets hold fewer values than the slice
counts (a slice written by hand, or cut short): the slice's maximum, never an error."""

from __future__ import annotations

from django_redis_metrics.statistic.histogram import Slice


def test_a_quantile_past_the_buckets_values_is_the_slices_maximum() -> None:
    short = Slice.from_text("3,6,2,1,3,0;0:1")  # 3 values (min 1, max 3), 1 in a bucket
    assert short.quantile(0.2) == 1.0  # the first value's bucket, clamped to the minimum
    assert short.quantile(0.99) == 3.0  # the third value is in no bucket: the maximum
