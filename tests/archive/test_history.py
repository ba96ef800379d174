"""``history()`` across the Redis/archive boundary equals a plain Python model of every write.

Redis is made to forget within the test (4 samples of 10 s and 60 s slices) while an archive
pass runs after each step with a pinned clock (``now=``): the history of the whole range must
be what a dict of every write says, slice by slice, on both databases and on Redis Cluster.
"""

from __future__ import annotations

import math
import random
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import pytest

from django_redis_metrics import Counter, Gauge, Statistic
from django_redis_metrics.archive.history import MAX_HISTORY
from django_redis_metrics.archive.passes import archive_all
from django_redis_metrics.core.timeutil import slice_start
from django_redis_metrics.models import ArchivedSlice
from django_redis_metrics.statistic.histogram import RELATIVE_ERROR, rank

from ..conftest import Backend
from .conftest import ARCHIVE_DATABASES

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES, transaction=True)

PRECISIONS = (10, 60)
STEPS = 40


@pytest.fixture
def tiny(backend: Backend, metrics_settings: Callable[..., None], archive_db: str) -> float:
    """Settings under which Redis forgets within seconds of slices; returns the test's base
    time (aligned, 10 minutes in the past: every write lies behind the clock)."""
    metrics_settings(
        COUNTER_PRECISIONS=PRECISIONS,
        COUNTER_SAMPLES=4,
        STATISTIC_PRECISIONS=PRECISIONS,
        STATISTIC_SAMPLES=4,
        ARCHIVE_PRECISIONS=PRECISIONS,
        ARCHIVE_DATABASE=archive_db,
        ARCHIVE_BATCH=2,
    )
    return float(slice_start(time.time(), 600) - 600)


def _steps(base: float, seed: int) -> list[float]:
    """Write times, one step of 0 to 9 s after another, so each pass closes a slice or two."""
    rng = random.Random(seed)
    times, at = [], base
    for _ in range(STEPS):
        at += rng.uniform(1, 9)
        times.append(at)
    return times


def test_counter_history_is_every_increment_across_the_boundary(tiny: float) -> None:
    plain = Counter("signups")
    labelled = Counter("hits", labels=("view",))
    model: dict[int, dict[int, int]] = {p: defaultdict(int) for p in PRECISIONS}
    by_view: dict[int, int] = defaultdict(int)
    rng = random.Random(1)
    times = _steps(tiny, 1)
    for at in times:
        count = rng.randint(1, 5)
        plain.incr(count, when=at)
        view = rng.choice(["home", "about"])
        labelled.labels(view=view).incr(count * 10, when=at)
        for p in PRECISIONS:
            model[p][slice_start(at, p)] += count
        if view == "home":
            by_view[slice_start(at, 60)] += count * 10
        archive_all(now=at + 1)
    end = times[-1]
    for p in PRECISIONS:
        expected = [
            (s, model[p].get(s, 0)) for s in range(slice_start(tiny, p), slice_start(end, p) + 1, p)
        ]
        assert plain.history(p, tiny, end) == expected
        tenfold = [(s, 10 * n) for s, n in expected]
        assert labelled.history(p, tiny, end) == tenfold  # its series added
        assert Counter.objects.filter(name="hits").history(p, tiny, end) == tenfold
    # Redis forgot most of it: the archive answered for the older slices.
    assert len(plain.series(10)) <= 4 < len([n for _, n in plain.history(10, tiny, end) if n])
    home = labelled.labels(view="home").history(60, tiny, end)
    assert home == [(s, by_view.get(s, 0)) for s, _ in home]  # labels kept in the archive
    assert ArchivedSlice.objects.using(_db()).filter(series="hits\x1fview=home").exists()


def _db() -> str:
    from django_redis_metrics.conf import conf

    return conf.ARCHIVE_DATABASE


def _check_summary(found: dict[str, Any], values: list[float]) -> None:
    if not values:
        assert found["count"] == 0 and found["mean"] is None
        return
    ordered = sorted(values)
    assert found["count"] == len(values)
    assert found["sum"] == pytest.approx(sum(values))
    assert (found["min"], found["max"]) == (ordered[0], ordered[-1])
    if len(values) > 1:
        mean = sum(values) / len(values)
        exact = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
        assert found["stddev"] == pytest.approx(exact)
    for name, q in (("p50", 0.5), ("p95", 0.95), ("p99", 0.99)):
        true = ordered[rank(q, len(ordered)) - 1]
        assert abs(found[name] - true) <= RELATIVE_ERROR * abs(true) + 1e-9


def test_statistic_history_merges_every_value_across_the_boundary(tiny: float) -> None:
    latency = Statistic("latency", labels=("view",))
    model: dict[int, dict[int, list[float]]] = {p: defaultdict(list) for p in PRECISIONS}
    rng = random.Random(2)
    times = _steps(tiny, 2)
    for at in times:
        values = [round(rng.lognormvariate(3, 1), 3) for _ in range(rng.randint(1, 4))]
        latency.labels(view=rng.choice(["home", "about"])).record_many(values, when=at)
        for p in PRECISIONS:
            model[p][slice_start(at, p)] += values
        archive_all(now=at + 1)
    end = times[-1]
    for p in PRECISIONS:
        found = latency.history(p, tiny, end)
        starts = list(range(slice_start(tiny, p), slice_start(end, p) + 1, p))
        assert [s for s, _ in found] == starts
        for start, summary in found:
            _check_summary(summary, model[p].get(start, []))
    assert Statistic.objects.filter(name="latency").history(60, tiny, end) == latency.history(
        60, tiny, end
    )


def test_gauge_history_keeps_last_min_max_across_the_boundary(tiny: float) -> None:
    queue = Gauge("queue")
    model: dict[int, dict[int, list[tuple[float, float]]]] = {
        p: defaultdict(list) for p in PRECISIONS
    }
    rng = random.Random(3)
    times = _steps(tiny, 3)
    for at in times:
        value = float(rng.randint(0, 100))
        queue.set(value, when=at)
        for p in PRECISIONS:
            model[p][slice_start(at, p)].append((at, value))
        archive_all(now=at + 1)
    end = times[-1]
    for p in PRECISIONS:
        expected = [
            (s, {"last": max(v)[1], "min": min(x for _, x in v), "max": max(x for _, x in v)})
            for s, v in sorted(model[p].items())
        ]
        assert queue.history(p, tiny, end) == expected


def test_a_slice_archived_then_written_late_is_corrected_not_added(tiny: float) -> None:
    """A write landing in the slice a pass just archived (a late, backfilled increment) is
    picked up by the next pass's one-slice overlap: the row is set, not added to."""
    hits = Counter("late")
    at = tiny + 5
    hits.incr(3, when=at)
    archive_all(now=at + 10)  # slice [tiny, tiny + 10) closed and archived: 3
    hits.incr(4, when=at)  # late write into the archived slice
    hits.incr(1, when=at + 10)
    archive_all(now=at + 20)
    rows = ArchivedSlice.objects.using(_db()).filter(series="late", precision=10)
    assert list(rows.order_by("start").values_list("start", "count")) == [
        (tiny, 7),
        (tiny + 10, 1),
    ]
    archive_all(now=at + 20)  # the same pass again: nothing changes
    assert list(rows.order_by("start").values_list("start", "count")) == [
        (tiny, 7),
        (tiny + 10, 1),
    ]


def test_bad_history_arguments_are_refused_before_anything_is_read(tiny: float) -> None:
    hits = Counter("hits")
    with pytest.raises(ValueError, match="no precision 7"):
        hits.history(7, tiny, tiny + 60)
    with pytest.raises(TypeError, match="precision must be an int"):
        hits.history("60", tiny, tiny + 60)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="start <= end"):
        hits.history(60, tiny + 60, tiny)
    with pytest.raises(ValueError, match="at most 100,000 slices"):
        hits.history(10, tiny - 10 * MAX_HISTORY, tiny)
    with pytest.raises(TypeError, match="history\\(\\) is for metrics kept in slices"):
        from django_redis_metrics import UniqueBitmap

        UniqueBitmap.objects.filter().history(60, tiny, tiny + 60)


def test_a_labelled_gauge_read_whole_groups_its_series(tiny: float) -> None:
    """``last`` added over the series (as ``group_by`` adds latest values), ``min`` and
    ``max`` the extremes any series held; the queryset's history groups the same way."""
    queue = Gauge("queues", labels=("host",))
    at = tiny + 12
    queue.labels(host="a").set(3, when=at)
    queue.labels(host="a").set(5, when=at + 1)
    queue.labels(host="b").set(10, when=at)
    queue.labels(host="b").set(1, when=at + 2)
    archive_all(now=at + 60)
    expected = [(slice_start(at, 10), {"last": 6.0, "min": 1.0, "max": 10.0})]
    assert queue.history(10, tiny, at + 5) == expected
    assert Gauge.objects.filter(name="queues").history(10, tiny, at + 5) == expected
    assert queue.labels(host="a").history(10, tiny, at + 5) == [
        (slice_start(at, 10), {"last": 5.0, "min": 3.0, "max": 5.0})
    ]


def test_a_series_redis_forgot_is_read_by_its_metric_not_by_a_queryset(tiny: float) -> None:
    """docs/history.md: a queryset selects among the series Redis lists; the metric read whole
    (and the series itself) still read a forgotten series' archived slices."""
    hits = Counter("hits", labels=("view",))
    hits.labels(view="home").incr(1, when=tiny + 1)
    hits.labels(view="about").incr(10, when=tiny + 2)
    archive_all(now=tiny + 60)
    queried = Counter.objects.filter(name="hits")
    assert hits.history(10, tiny, tiny + 5) == queried.history(10, tiny, tiny + 5) == [(tiny, 11)]
    hits.labels(view="about").delete()
    assert hits.history(10, tiny, tiny + 5) == [(tiny, 11)]
    assert hits.labels(view="about").history(10, tiny, tiny + 5) == [(tiny, 10)]
    assert queried.history(10, tiny, tiny + 5) == [(tiny, 1)]


def test_a_pass_reads_only_what_closed_since_its_cursor(tiny: float) -> None:
    """A precision with no slice closed since the last pass is not read at all; a metric
    without an archived precision gives no row at it."""
    Counter("fine").incr(1, when=tiny + 1)
    Counter("coarse", precisions=[60]).incr(1, when=tiny + 1)
    first = {r.kind: r for r in archive_all(now=tiny + 70)}
    assert first["counter"].series == 2
    rows = ArchivedSlice.objects.using(_db()).filter(kind="counter")
    assert sorted(rows.values_list("series", "precision")) == [
        ("coarse", 60),
        ("fine", 10),
        ("fine", 60),
    ]
    again = {r.kind: r for r in archive_all(now=tiny + 75)}  # nothing closed since
    assert (again["counter"].series, again["counter"].rows) == (0, 0)
