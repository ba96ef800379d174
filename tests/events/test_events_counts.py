"""EventSeries.counts: windows clipped to the range, against a plain list of timestamps, and the
cache still serving the whole windows inside it; on a single node and a cluster."""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import EventSeries

T0 = 1_700_000_000.0
BASE = T0 - T0 % 60  # a multiple of 60: window starts below are plain to read


def below(timestamp: float) -> float:
    return math.nextafter(timestamp, -math.inf)


def model_counts(times: list[float], lo: float, hi: float, window: float | Fraction) -> list[int]:
    """Events with ``lo <= t <= hi`` per window ``[k * window, (k + 1) * window)``, from the
    window holding ``lo`` to the one holding ``hi``: exact rationals, no float rounding."""
    size = Fraction(window)
    first, last = math.floor(Fraction(lo) / size), math.floor(Fraction(hi) / size)
    counts = [0] * (last - first + 1)
    for t in times:
        if lo <= t <= hi:
            counts[math.floor(Fraction(t) / size) - first] += 1
    return counts


@dataclass
class Scenario:
    times: list[float]
    lo: float
    hi: float
    window: int | float
    per_call: int


#: Window sizes whose multiples near T0 are exact doubles, so the model's rationals are the
#: boundaries Redis compares against.
WINDOWS = [1, 7, 30, 60, 2.5, 0.75]


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    window = draw(st.sampled_from(WINDOWS))
    k0 = math.floor(Fraction(T0) / Fraction(window))
    boundary = st.integers(k0 - 2, k0 + math.ceil(110 / window)).map(
        lambda k: float(k * Fraction(window))
    )
    anywhere = st.floats(T0 - 5, T0 + 105, allow_nan=False)
    whole = st.integers(int(T0) - 5, int(T0) + 105).map(float)
    times = draw(st.lists(st.one_of(boundary, anywhere, whole), max_size=40))
    edges = [boundary, boundary.map(below), anywhere, whole]
    if times:
        edges.append(st.sampled_from(times))  # an event exactly on start or end
    edge = st.one_of(edges)
    lo = draw(edge)
    hi = lo if draw(st.integers(0, 5)) == 0 else draw(edge)
    lo, hi = min(lo, hi), max(lo, hi)
    per_call = draw(st.sampled_from([1, 3, 2000]))  # the clipped edges in separate calls
    return Scenario(times, lo, hi, window, per_call)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=scenarios())
def test_counts_match_a_plain_model(
    backend: Any, monkeypatch: pytest.MonkeyPatch, case: Scenario
) -> None:
    monkeypatch.setattr(EventSeries, "MAX_WINDOWS_PER_CALL", case.per_call)
    series = EventSeries(f"c-{uuid.uuid4().hex[:8]}")
    if case.times:
        series.record_many([{"when": t, "n": i} for i, t in enumerate(case.times)])
    expected = model_counts(case.times, case.lo, case.hi, case.window)
    total = sum(1 for t in case.times if case.lo <= t <= case.hi)

    got = series.counts(case.lo, case.hi, case.window)
    assert got == expected  # window by window
    assert sum(got) == series.count(case.lo, case.hi) == total
    # Whole windows of the range, aligned to its edges, are the same with and without clipping.
    size = Fraction(case.window)
    first = float(math.floor(Fraction(case.lo) / size) * size)
    end = below(float((math.floor(Fraction(case.hi) / size) + 1) * size))
    assert series.counts(first, end, case.window) == model_counts(case.times, first, end, size)
    # Those calls cached every closed whole window (2023 is long past): served from the cache
    # now, the edges counted again, the answers unchanged.
    assert series.counts(case.lo, case.hi, case.window) == expected
    assert series.counts(case.lo, case.hi, case.window, cache=False) == expected


def test_counts_clip_the_first_and_last_windows(backend: Any) -> None:
    """Events outside [start, end] but inside its first or last window are not counted (main
    counted the whole windows: [3, 3, 4] below)."""
    series = EventSeries("clipped")
    for offset in (10, 29.999, 30, 60, 75, 119.5, 120, 150, 150.001, 170):
        series.record(BASE + offset, kind="a")
    lo, hi = BASE + 30, BASE + 150
    assert series.counts(lo, hi, 60) == [1, 3, 2]  # [30, 60) [60, 120) [120, 150]
    assert sum(series.counts(lo, hi, 60)) == series.count(lo, hi) == 6
    # start and end in the same window, and start == end on an event.
    assert series.counts(BASE + 61, BASE + 119.5, 60) == [2]
    assert series.counts(BASE + 150, BASE + 150, 60) == [1]
    assert series.counts(BASE + 150.0005, BASE + 150.0005, 60) == [0]
    # An end on a window's start opens that window with the events exactly there.
    assert series.counts(BASE + 30, BASE + 120, 60) == [1, 3, 1]
    # Float windows, an edge on a float boundary.
    assert series.counts(BASE + 29.999, BASE + 75, 7.5) == [1, 1, 0, 0, 0, 1, 0, 1]
    assert series.counts(BASE, BASE + 60, 15.0) == [1, 1, 1, 0, 1]


def _zcount_calls(backend: Any, key: str) -> int:
    """ZCOUNTs the node holding ``key`` has run so far (scripts' calls included)."""
    client = backend.client
    if backend.cluster:
        client = client.get_node_from_key(key).redis_connection
    stats: dict[str, Any] = client.info("commandstats")
    return int(stats.get("cmdstat_zcount", {}).get("calls", 0))


def test_cache_serves_interior_windows_and_never_a_clipped_edge(backend: Any) -> None:
    series = EventSeries("cached")
    for offset in (10, 50, 70, 130, 190, 230):
        series.record(BASE + offset, kind="a")
    whole = series.counts(BASE, below(BASE + 240), 60)
    assert whole == [2, 1, 1, 2]
    cache = series.cache_key(60)
    assert [s for _, s in backend.client.zrange(cache, 0, -1, withscores=True)] == [
        BASE + k * 60 for k in range(4)
    ]

    # The edge windows are cached whole ([0, 60): 2, [180, 240): 2); the range holds part of
    # each: counted exactly, never read from the cache.
    lo, hi = BASE + 30, BASE + 200
    before = _zcount_calls(backend, series.time_key)
    assert series.counts(lo, hi, 60) == [1, 1, 1, 1]
    assert _zcount_calls(backend, series.time_key) - before == 2  # the edges; interior cached

    # Prove the interior windows come from the cache: tamper with their entries.
    backend.client.zremrangebyscore(cache, BASE + 60, BASE + 120)
    start_1, start_2 = int(BASE + 60), int(BASE + 120)
    backend.client.zadd(cache, {f"{start_1}:41": start_1, f"{start_2}:42": start_2})
    assert series.counts(lo, hi, 60) == [1, 41, 42, 1]
    # A clipped call caches no edge: the tampered whole-window entries are all the cache holds.
    assert backend.client.zcard(cache) == 4


def test_clipped_counts_stay_one_round_trip(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from ..roundtrips import RoundTrips

    series = EventSeries("trips")
    series.record(BASE + 5, kind="a")
    series.counts(BASE + 1, BASE + 86_399, 300)  # loads the script, settles cluster routing
    trips = RoundTrips(monkeypatch)
    assert trips.measure(lambda: series.counts(BASE + 1, BASE + 86_399, 300)) == 1
    assert trips.measure(lambda: series.counts(BASE + 1, BASE + 2, 300)) == 1


def test_the_documented_example(single: Any) -> None:
    """docs/events.md, Queries."""
    orders = EventSeries("orders")
    t0 = 1_700_000_040
    for offset in (10, 50, 70, 150):
        orders.record(t0 + offset, type="view")
    assert orders.counts(t0 + 30, t0 + 140, 60) == [1, 1, 0]
    assert orders.count(t0 + 30, t0 + 140) == 2
    assert orders.counts(t0, math.nextafter(t0 + 180, 0), 60) == [2, 1, 1]
    assert single.client.zcard(orders.cache_key(60)) == 3
