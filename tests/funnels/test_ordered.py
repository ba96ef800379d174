"""Ordered funnels over an event series: users who did the steps in order, each within
``within`` seconds of their first step, equal to a plain search over every user's events;
bounded in the events a call reads; bad input refused."""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import EventSeries, Funnel
from django_redis_metrics.core.periods import Day
from django_redis_metrics.funnels import OrderedFunnel

from ..asyncio_helpers import run
from ..clock import moment

STEPS = [{"type": "view"}, {"type": "cart"}, {"type": "buy"}]
TYPES = ("view", "cart", "buy", "other")


def plain_counts(
    events: Sequence[Mapping[str, Any]],
    steps: Sequence[Mapping[str, Any]],
    user: str,
    within: float,
) -> list[int]:
    """Every user's best depth, by trying every increasing sequence of their events."""
    by_user: dict[str, list[Mapping[str, Any]]] = {}
    for event in sorted(events, key=lambda e: (e["timestamp"], e["id"])):
        if user in event:
            by_user.setdefault(str(event[user]), []).append(event)
    counts = [0] * len(steps)
    for mine in by_user.values():
        depth = 0
        for k in range(1, len(steps) + 1):
            for chosen in itertools.combinations(mine, k):
                if all(
                    all(str(e.get(f)) == str(v) for f, v in steps[i].items())
                    for i, e in enumerate(chosen)
                ) and (chosen[-1]["timestamp"] - chosen[0]["timestamp"] <= within):
                    depth = k
                    break
            if depth < k:
                break
        for k in range(depth):
            counts[k] += 1
    return counts


#: (user or None, type, seconds after the start)
events_strategy = st.lists(
    st.tuples(st.one_of(st.none(), st.integers(0, 4)), st.sampled_from(TYPES), st.integers(0, 40)),
    max_size=14,
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(events=events_strategy, within=st.sampled_from([0, 5, 15, 1000]))
def test_ordered_counts_equal_a_plain_search(backend: Any, events: list[Any], within: int) -> None:
    now = time.time()
    start = Day.containing(now).shift(-1).start_ts
    series = EventSeries(f"orders-{time.monotonic_ns()}", index=["type"])
    for who, kind, at in events:
        fields: dict[str, Any] = {"type": kind} if who is None else {"type": kind, "user": who}
        series.record(when=start + at, **fields)
    funnel = Funnel.ordered(series, steps=STEPS, user="user", within=within)
    stored = series.between(start, now)
    expected = plain_counts(stored, STEPS, "user", within)
    assert funnel.counts(start, now) == expected
    assert run(lambda: funnel.acounts(start, now)) == expected
    assert all(a >= b for a, b in itertools.pairwise(expected))


def test_the_order_and_the_window_matter(backend: Any) -> None:
    now = time.time()
    t = Day.containing(now).shift(-1).start_ts
    series = EventSeries("orders", index=["type"])
    timeline = [
        (1, "view", 0), (1, "cart", 10), (1, "buy", 20),     # all three in order
        (2, "cart", 0), (2, "view", 10), (2, "buy", 20),     # carted before viewing
        (3, "view", 0), (3, "cart", 50), (3, "buy", 200),    # bought too late
        (4, "view", 0), (4, "view", 150), (4, "cart", 160), (4, "buy", 170),  # a later start
    ]  # fmt: skip
    for who, kind, at in timeline:
        series.record(when=t + at, type=kind, user=who)
    funnel = Funnel.ordered(series, steps=STEPS, user="user", within=100)
    assert funnel.counts(t, now) == [4, 3, 2]
    assert funnel.counts(t + 5, now) == [2, 1, 1]  # the range bounds the events read
    assert funnel.labels == ["type=view", "type=cart", "type=buy"]


def test_over_time_counts_each_day_apart(backend: Any) -> None:
    now = time.time()
    today = Day.containing(now)
    series = EventSeries("orders", index=["type"])
    for back, users in ((2, (1, 2)), (1, (1,)), (0, (3,))):
        for who in users:
            for i, kind in enumerate(("view", "cart")):
                series.record(when=moment(today.shift(-back), 60 + i, now=now), type=kind, user=who)
    funnel = Funnel.ordered(series, steps=STEPS[:2], user="user", within=3600)
    over = funnel.over_time(3, now)
    assert [day for day, _ in over] == [today.shift(-2), today.shift(-1), today]
    assert [counts for _, counts in over] == [[2, 2], [1, 1], [1, 1]]
    assert run(lambda: funnel.aover_time(3, now)) == over


def test_past_max_events_a_call_raises(backend: Any, metrics_settings: Any) -> None:
    now = time.time()
    series = EventSeries("orders")
    for i in range(6):
        series.record(when=now - 10 + i, type="view", user=i)
    funnel = Funnel.ordered(series, steps=STEPS, within=60)
    metrics_settings(FUNNEL_MAX_EVENTS=6)
    assert funnel.counts(now - 20, now) == [6, 0, 0]
    metrics_settings(FUNNEL_MAX_EVENTS=5)
    with pytest.raises(ValueError, match="FUNNEL_MAX_EVENTS = 5"):
        funnel.counts(now - 20, now)
    with pytest.raises(ValueError, match="FUNNEL_MAX_EVENTS"):
        run(lambda: funnel.acounts(now - 20, now))


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (("not a series", STEPS), {}, TypeError, "reads an EventSeries"),
        ((None, "view"), {}, TypeError, "list of dicts"),
        ((None, []), {}, ValueError, "1 to 16 steps"),
        ((None, ["view"]), {}, TypeError, "dict of values"),
        ((None, [{"type": object()}]), {}, TypeError, "must be a str"),
        ((None, STEPS), {"within": -1}, ValueError, "within"),
        ((None, STEPS), {"within": float("nan")}, ValueError, "within"),
        ((None, STEPS), {"within": "1d"}, TypeError, "within"),
        ((None, STEPS), {"within": True}, TypeError, "within"),
        ((None, STEPS), {"user": ""}, ValueError, "must not be empty"),
    ],
)
def test_bad_input_is_refused_and_nothing_is_written(
    backend: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    error: type[Exception],
    message: str,
) -> None:
    series = EventSeries("orders")
    first = series if args[0] is None else args[0]
    with pytest.raises(error, match=message):
        Funnel.ordered(first, *args[1:], **kwargs)
    assert backend.keys() == []
    assert isinstance(Funnel.ordered(series, STEPS), OrderedFunnel)
