"""A labelled statistic: each series keeps its own values, and the statistic read as a whole
merges them (counts and sums added, min of mins, histograms added bucket by bucket)."""

from __future__ import annotations

import math
import time
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Statistic
from django_redis_metrics.statistic.histogram import RELATIVE_ERROR, rank

from ..asyncio_helpers import run

HOUR = 3600

recordings = st.lists(
    st.tuples(
        st.sampled_from(["home", "cart", "api"]),
        st.floats(0.5, 5000, allow_nan=False),
        st.integers(0, 2),  # hours back
    ),
    min_size=1,
    max_size=30,
)


def exact_quantile(values: list[float], q: float) -> float:
    return sorted(values)[rank(q, len(values)) - 1]


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(written=recordings)
def test_the_statistic_merges_its_series(backend: Any, written: list[Any]) -> None:
    now = time.time()
    latency = Statistic(f"latency-{uuid.uuid4().hex}", labels=("view",))  # ids are reused
    per_hour: dict[int, list[float]] = {}
    for view, value, hours in written:
        when = now - hours * HOUR
        latency.labels(view=view).record(value, when=when)
        per_hour.setdefault(int(when // HOUR) * HOUR, []).append(value)
    found = dict(latency.series(HOUR))
    assert sorted(found) == sorted(per_hour)
    for start, values in per_hour.items():
        summary = found[start]
        assert summary["count"] == len(values)
        assert math.isclose(summary["sum"], sum(values), rel_tol=1e-9)
        assert (summary["min"], summary["max"]) == (min(values), max(values))
        exact = exact_quantile(values, 0.95)
        assert abs(summary["p95"] - exact) <= RELATIVE_ERROR * exact * (1 + 1e-9)
    current = per_hour.get(int(now // HOUR) * HOUR, [])
    assert latency.summary(HOUR, when=now)["count"] == len(current)
    if current:
        exact = exact_quantile(current, 0.5)
        got = latency.percentile(HOUR, 0.5, when=now)
        assert got is not None and abs(got - exact) <= RELATIVE_ERROR * exact * (1 + 1e-9)
    totals = latency.totals()
    assert totals["count"] == len(written)
    assert math.isclose(totals["sum"], sum(v for _, v, _ in written), rel_tol=1e-9)
    recent = latency.recent(HOUR, 3, until=now)
    assert [s for s, _ in recent] == [int(now // HOUR) * HOUR - k * HOUR for k in (2, 1, 0)]
    assert [summary["count"] for _, summary in recent] == [
        len(per_hour.get(s, [])) for s, _ in recent
    ]
    assert run(lambda: latency.atotals()) == totals


def test_labelled_statistic_writes_go_through_batch_and_async(single: Any) -> None:
    from django_redis_metrics import Batch

    latency = Statistic("timed", labels=("view",))
    now = time.time()
    batch = Batch()
    latency.labels(view="a").record(10, when=now, batch=batch)
    latency.labels(view="b").record_many([20, 30], when=now, batch=batch)
    batch.execute()
    run(lambda: latency.labels(view="c").arecord(40, when=now))
    with latency.labels(view="d").time():
        pass
    summary = latency.summary(HOUR, when=now)
    assert summary["count"] == 5 and summary["max"] == 40
    assert latency.labels(view="b").summary(HOUR, when=now)["count"] == 2
