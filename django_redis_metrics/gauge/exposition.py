"""The gauges' Prometheus family: each gauge's latest value, labelled by its name."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric

from ..core.kind import ReadPlan
from ..exposition.families import NAMESPACE
from .model import Gauge


def gauge_families(plan: ReadPlan) -> Iterator[Metric]:
    gauges = GaugeMetricFamily(
        f"{NAMESPACE}_gauge", "The latest value set on each gauge.", labels=["metric"]
    )
    for gauge in Gauge.objects.all():
        plan.add(gauge._latest_steps(), _latest_adder(gauges, gauge.name))
    yield gauges


def _latest_adder(family: GaugeMetricFamily, name: str) -> Callable[[Any], None]:
    def use(latest: tuple[float, float] | None) -> None:
        if latest is not None:
            family.add_metric([name], latest[1])

    return use
