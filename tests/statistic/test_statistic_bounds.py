"""Statistic.record_many's script calls are bounded whatever the values: at most
MAX_BUCKETS_PER_CALL histogram buckets and MAX_VALUES_PER_CALL values each, and the slices they
leave are exactly what one call, or a plain Python model adding value by value, gives."""

from __future__ import annotations

import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Statistic, get_redis_connection
from django_redis_metrics.statistic import histogram
from django_redis_metrics.statistic.histogram import Slice

WHEN = 1_000_000_000 + 90
EXAMPLES = itertools.count()
#: 1,000 values, each in a histogram bucket of its own.
ADVERSARIAL = [1.1**k for k in range(-630, 370)]


class Unsplit(Statistic):
    """The same statistic sending every value in one script call."""

    MAX_VALUES_PER_CALL: ClassVar[int] = 10**9
    MAX_BUCKETS_PER_CALL: ClassVar[int] = 10**9


@dataclass
class Model:
    """A slice kept in Python the way the script adds one value: Welford's update, min and max,
    and past ``max_buckets`` buckets the two lowest merged."""

    max_buckets: int
    count: int = 0
    total: float = 0.0
    m2: float = 0.0
    low: float = math.inf
    high: float = -math.inf
    buckets: dict[int, int] = field(default_factory=dict)

    def add(self, value: float) -> None:
        if self.count == 0:
            self.count, self.total, self.m2 = 1, value, 0.0
        else:
            mean = self.total / self.count
            self.count += 1
            self.total += value
            self.m2 += (value - mean) * (value - self.total / self.count)
        self.low, self.high = min(self.low, value), max(self.high, value)
        index = histogram.bucket(value)
        self.buckets[index] = self.buckets.get(index, 0) + 1
        if len(self.buckets) > self.max_buckets:
            lowest, second = sorted(self.buckets)[:2]
            self.buckets[second] += self.buckets.pop(lowest)

    def slice(self) -> Slice:
        return Slice(
            self.count, self.total, self.m2, self.low, self.high, sorted(self.buckets.items())
        )


def stored(statistic: Statistic, precision: int) -> Slice:
    text = get_redis_connection().hget(statistic.key(precision), str(WHEN // precision * precision))
    return Slice.from_text(text)


def test_calls_are_bounded_runs_of_the_sorted_values() -> None:
    values = random.Random(3).sample(ADVERSARIAL, 1000) + [5.0] * 600
    runs = histogram.calls(values, 250, 8)
    assert [v for run in runs for v in run] == sorted(values)
    assert all(len(run) <= 250 for run in runs)
    assert all(len({histogram.bucket(v) for v in run}) <= 8 for run in runs)
    assert len(runs) == math.ceil(1000 / 8) + 2  # the 601 values of bucket 5.0: 3 runs


def test_each_call_touches_a_bounded_number_of_buckets(backend: Any) -> None:
    statistic = Statistic("adversarial")
    calls = statistic.record_many(ADVERSARIAL, when=WHEN)
    assert calls == math.ceil(len(ADVERSARIAL) / Statistic.MAX_BUCKETS_PER_CALL)
    assert statistic.summary(60, when=WHEN)["count"] == 1000


@pytest.mark.parametrize("seed", range(4))
def test_split_calls_leave_the_slice_one_call_and_the_model_leave(backend: Any, seed: int) -> None:
    rng = random.Random(seed)
    history = [10 ** rng.uniform(-3, 4) for _ in range(rng.randrange(0, 300))]
    values = [
        rng.choice([10 ** rng.uniform(-3, 6), -rng.uniform(0, 50), 0.0, 7.0, 2**53])
        for _ in range(rng.randrange(1, 700))
    ]
    split, whole = Statistic("split", precisions=[60, 3600]), Unsplit("whole", precisions=[60])
    for statistic in (split, whole):
        if history:
            statistic.record_many(history, when=WHEN)
    calls = split.record_many(values, when=WHEN)
    assert whole.record_many(values, when=WHEN) == 1
    model = Model(Statistic.MAX_BUCKETS)
    for value in sorted(history) + sorted(values):
        model.add(value)
    assert calls == len(histogram.calls(values, 250, 8))
    assert stored(split, 60) == stored(whole, 60) == model.slice()
    assert stored(split, 3600) == model.slice()
    summary = split.summary(60, when=WHEN)
    assert (summary["count"], summary["sum"], summary["min"], summary["max"]) == (
        model.count,
        model.total,
        model.low,
        model.high,
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    first=st.lists(st.floats(-1e6, 1e6, allow_nan=False), max_size=40),
    values=st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=120),
)
def test_a_split_mid_record_many_changes_nothing(
    single: Any, first: list[float], values: list[float]
) -> None:
    """Tiny bounds so that every input is split, and slices of 12 buckets so that they merge."""

    class Tiny(Statistic):
        MAX_VALUES_PER_CALL: ClassVar[int] = 5
        MAX_BUCKETS_PER_CALL: ClassVar[int] = 3
        MAX_BUCKETS: ClassVar[int] = 12

    class TinyWhole(Unsplit):
        MAX_BUCKETS: ClassVar[int] = 12

    name = f"h{next(EXAMPLES)}"  # `random` is seeded alike for every example
    split, whole = Tiny(name + "s", precisions=[60]), TinyWhole(name + "w", precisions=[60])
    for statistic in (split, whole):
        if first:
            statistic.record_many(first, when=WHEN)
        statistic.record_many(values, when=WHEN)
    model = Model(12)
    for value in sorted(first) + sorted(values):
        model.add(value)
    assert stored(split, 60) == stored(whole, 60) == model.slice()
