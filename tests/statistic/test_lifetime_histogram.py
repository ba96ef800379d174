"""The lifetime histogram a statistic keeps in its meta hash (``statistic_record.lua``): what
its Prometheus histogram is built from; never trimmed, bounded to ``LIFETIME_BUCKETS``."""

from __future__ import annotations

from typing import Any

from django_redis_metrics import Statistic, get_redis_connection
from django_redis_metrics.exposition.families import Draft
from django_redis_metrics.statistic.exposition import LIFETIME_BUCKETS, Lifetime
from django_redis_metrics.statistic.histogram import bucket


def lifetime(statistic: Statistic) -> dict[int, int]:
    meta = get_redis_connection().hgetall(statistic.meta_key)
    return {
        int(k[1:]): int(v)
        for k, v in ((k.decode(), v) for k, v in meta.items())
        if k.startswith("b") and k != "bn"
    }


def test_every_value_counts_in_its_bucket_one_by_one_or_many_at_once(backend: Any) -> None:
    values = [0.5, 3.0, 3.1, 250.0, -7.0, 0.0, 3.0, 1e9]
    one, many = Statistic("one", precisions=[1], samples=2), Statistic("many")
    for value in values:
        one.record(value, when=1_000)
    one.record(1.0)  # trims every earlier slice: the lifetime histogram keeps them
    many.record_many([*values, 1.0])
    expected: dict[int, int] = {}
    for value in [*values, 1.0]:
        expected[bucket(value)] = expected.get(bucket(value), 0) + 1
    assert lifetime(one) == lifetime(many) == expected
    assert one.totals()["count"] == len(values) + 1


def test_buckets_past_the_bound_count_only_in_the_totals(backend: Any) -> None:
    spread = Statistic("spread")
    values = [2 ** ((i + 0.5) / 8) for i in range(LIFETIME_BUCKETS + 10)]  # a bucket each
    spread.record_many(values)
    spread.record(values[0])  # a bucket already kept still counts
    kept = lifetime(spread)
    assert len(kept) == LIFETIME_BUCKETS
    assert sorted(kept) == sorted(bucket(v) for v in values[:LIFETIME_BUCKETS])
    assert kept[bucket(values[0])] == 2
    found = Lifetime.of(get_redis_connection().hgetall(spread.meta_key))
    draft = Draft("spread", "statistic", "histogram", "")
    found.add_to(draft, {}, found.bounds)
    samples = list(zip(draft.suffixes, draft.labels, draft.values, strict=True))
    assert samples[-3] == ("_bucket", {"le": "+Inf"}, len(values) + 1)
    finite = [n for suffix, labels, n in samples if suffix == "_bucket" and labels["le"] != "+Inf"]
    assert max(finite) == LIFETIME_BUCKETS + 1
