"""The estimates' Prometheus family: distinct items in each estimate's current periods."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from ..core.kind import ReadPlan
from ..core.steps import Op
from ..exposition.families import NAMESPACE, adder, count_steps, current_period
from .model import UniqueEstimate


def estimate_families(plan: ReadPlan) -> Iterator[Metric]:
    estimates = GaugeMetricFamily(
        f"{NAMESPACE}_unique_estimate",
        "Distinct items added in the current period of each HyperLogLog estimate "
        "(about 0.81 % standard error).",
        labels=["metric", "period"],
    )
    for estimate in UniqueEstimate.objects.all():
        for period in estimate.periods:
            # Through execute_command: redis-py's cluster pipeline refuses its pfcount(),
            # which may name keys in several slots (one key always has one).
            key = current_period(estimate, period)
            read = count_steps(Op("execute_command", "PFCOUNT", key))
            plan.add(read, adder(estimates, estimate.name, period))
    yield estimates
