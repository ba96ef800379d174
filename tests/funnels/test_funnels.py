"""Funnels of unique-user bitmaps: each step's users within the previous steps', in one period,
over a range and day by day, against Python sets of the marks, plain and labelled, on the
single node and on the Redis Cluster (each bitmap in its own slot)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Funnel, UniqueBitmap
from django_redis_metrics.core.periods import Day
from django_redis_metrics.funnels import bounds

from ..asyncio_helpers import run
from ..bitmaps.test_bitmaps_labels import temporaries
from ..clock import moment
from ..roundtrips import RoundTrips

DAYS = 4
PLANS = ("free", "pro")

#: (step, user, days back, plan)
marks_strategy = st.lists(
    st.tuples(
        st.integers(0, 2), st.integers(0, 30), st.integers(0, DAYS - 1), st.sampled_from(PLANS)
    ),
    max_size=60,
)


def cumulative(sets: list[set[int]]) -> list[int]:
    """Users at each step: the intersection of the steps so far."""
    counts, current = [], None
    for users in sets:
        current = set(users) if current is None else current & users
        counts.append(len(current))
    return counts


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(marks=marks_strategy, labelled=st.lists(st.booleans(), min_size=3, max_size=3))
def test_a_funnel_equals_the_intersections_of_sets(
    backend: Any, marks: list[Any], labelled: list[bool]
) -> None:
    now = time.time()
    token = uuid.uuid4().hex[:8]
    steps = [
        UniqueBitmap(f"step{i}-{token}", periods=("day",), labels=("plan",) if lab else ())
        for i, lab in enumerate(labelled)
    ]
    today = Day.containing(now)
    days: list[list[set[int]]] = [[set() for _ in range(DAYS)] for _ in steps]
    for step, user, back, plan in marks:
        bitmap = steps[step]
        (bitmap.labels(plan=plan) if bitmap.label_names else bitmap).mark(
            user, moment(today.shift(-back), 60, now=now)
        )
        days[step][DAYS - 1 - back].add(user)
    funnel = Funnel(steps=steps)
    for offset in range(DAYS):
        day = today.shift(offset - DAYS + 1)
        expected = cumulative([per_day[offset] for per_day in days])
        assert funnel.counts("day", day.start_ts) == expected
    first = today.shift(-(DAYS - 1))
    union = [set().union(*per_day) for per_day in days]
    assert funnel.between(first.start_ts, now).counts() == cumulative(union)
    assert run(lambda: funnel.between(first.start_ts, now).acounts()) == cumulative(union)
    assert run(lambda: funnel.acounts("day", now)) == cumulative([d[-1] for d in days])
    over = funnel.over_time(DAYS, now)
    assert [day for day, _ in over] == [today.shift(i - DAYS + 1) for i in range(DAYS)]
    assert [c for _, c in over] == [cumulative([d[i] for d in days]) for i in range(DAYS)]
    assert run(lambda: funnel.aover_time(DAYS, now)) == over
    assert temporaries(backend) == []


def test_checkout(backend: Any) -> None:
    now = time.time()
    visited, carted, bought = (UniqueBitmap(n) for n in ("visited", "carted", "bought"))
    for user in range(10):
        visited.mark(user, now)
    for user in (1, 2, 3, 42):  # 42 carted without a visit: not in the funnel
        carted.mark(user, now)
    bought.mark(2, now), bought.mark(42, now)
    checkout = Funnel(steps=[visited, carted, bought])
    assert checkout.counts("day", now) == [10, 3, 1]
    assert checkout.counts("week", now) == [10, 3, 1]
    assert Funnel([visited]).counts("month", now) == [10]
    assert checkout.labels == ["visited", "carted", "bought"]


def test_a_series_is_a_step_too(backend: Any) -> None:
    now = time.time()
    active = UniqueBitmap("active", labels=("plan",))
    bought = UniqueBitmap("bought")
    for user in (1, 2, 3):
        active.labels(plan="pro").mark(user, now)
    active.labels(plan="free").mark(4, now)
    for user in (3, 4):
        bought.mark(user, now)
    assert Funnel([active.labels(plan="pro"), bought]).counts("day", now) == [3, 1]
    assert Funnel([active, bought]).counts("day", now) == [4, 2]
    assert temporaries(backend) == []


def test_a_plain_funnel_costs_one_round_trip_on_a_single_node(
    single: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    steps = [UniqueBitmap(name) for name in ("a", "b", "c")]
    for step in steps:
        step.mark(1, now)
    funnel = Funnel(steps)
    funnel.between(now - 10 * 86400, now).counts()  # scripts loaded
    trips = RoundTrips(monkeypatch)
    assert trips(lambda: funnel.counts("day", now)) == 1
    assert trips(lambda: funnel.between(now - 10 * 86400, now).counts()) == 1
    assert trips(lambda: funnel.over_time(30, now)) == 1
    labelled = UniqueBitmap("d", labels=("plan",))
    labelled.labels(plan="pro").mark(1, now)
    with_series = Funnel([*steps, labelled])
    with_series.counts("day", now)
    assert trips(lambda: with_series.counts("day", now)) == 2  # its series listed, then read


def test_a_new_server_runs_the_unions_before_the_count(
    single: Any,
) -> None:
    """The unions and the count are calls of one script: a server that has not seen it answers
    NOSCRIPT to every call, and all are sent again, in order, so the count reads the unions
    (were they two scripts, the count could run before unions sent again)."""
    now = time.time()
    steps = [UniqueBitmap(name) for name in ("a", "b")]
    for step in steps:
        step.mark(1, now)
    single.client.script_flush()
    assert Funnel(steps).counts("day", now) == [1, 1]  # a count alone
    assert Funnel(steps).between(now - 3 * 86400, now).counts() == [1, 1]


@pytest.mark.parametrize(
    ("make", "error", "message"),
    [
        (lambda b: Funnel(b), TypeError, "list of UniqueBitmap"),
        (lambda b: Funnel("abc"), TypeError, "list of UniqueBitmap"),
        (lambda b: Funnel([b, "x"]), TypeError, "is a UniqueBitmap"),
        (lambda b: Funnel([]), ValueError, "1 to 16 steps"),
        (lambda b: Funnel([b] * (bounds.MAX_STEPS + 1)), ValueError, "steps"),
        (lambda b: Funnel([b], name=""), ValueError, "name"),
        (lambda b: Funnel([b], name=3), TypeError, "name"),
        (lambda b: Funnel([b]).counts("hour"), ValueError, "keeps no hour keys"),
        (lambda b: Funnel([b]).counts("year"), ValueError, "year"),
        (lambda b: Funnel([b]).over_time(0), ValueError, "days"),
        (lambda b: Funnel([b]).over_time(bounds.MAX_WINDOWS + 1), ValueError, "at most"),
        (lambda b: Funnel([b]).over_time(True), TypeError, "days"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    backend: Any, make: Any, error: type[Exception], message: str
) -> None:
    bitmap = UniqueBitmap("visited")
    with pytest.raises(error, match=message):
        make(bitmap)
    assert backend.keys() == []
