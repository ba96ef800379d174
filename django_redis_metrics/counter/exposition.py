"""The counters' Prometheus family: each counter's lifetime total, labelled by its name."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import CounterMetricFamily, Metric

from ..core.kind import ReadPlan
from ..exposition.families import NAMESPACE, adder
from .model import Counter


def counter_families(plan: ReadPlan) -> Iterator[Metric]:
    counters = CounterMetricFamily(
        f"{NAMESPACE}_counter",
        "Net sum of the increments of each counter since it was first written.",
        labels=["metric"],
    )
    for counter in Counter.objects.all():
        plan.add(counter._lifetime_total_steps(), adder(counters, counter.name))
    yield counters
