"""The statistics' Prometheus family: a summary per statistic (count, sum, quantiles)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import Metric

from ..core.kind import ReadPlan
from ..exposition.families import NAMESPACE
from .model import Statistic

#: The quantiles a statistic's summary carries.
QUANTILES = (("0.5", "p50"), ("0.95", "p95"), ("0.99", "p99"))


def statistic_families(plan: ReadPlan) -> Iterator[Metric]:
    summaries = Metric(
        f"{NAMESPACE}_statistic",
        "Values recorded in each statistic since it was first written (count and sum); "
        "quantiles of the current slice of its finest precision, within 4.33 %.",
        "summary",
    )
    for statistic in Statistic.objects.all():
        finest = min(statistic.precisions)
        plan.add(
            statistic._summary_steps(finest, None), _quantiles_adder(summaries, statistic.name)
        )
        plan.add(statistic._totals_steps(), _totals_adder(summaries, statistic.name))
    yield summaries


def _totals_adder(family: Metric, name: str) -> Callable[[Any], None]:
    def use(totals: dict[str, Any]) -> None:
        family.add_sample(f"{family.name}_count", {"metric": name}, totals["count"])
        family.add_sample(f"{family.name}_sum", {"metric": name}, totals["sum"])

    return use


def _quantiles_adder(family: Metric, name: str) -> Callable[[Any], None]:
    def use(summary: dict[str, Any]) -> None:
        for quantile, key in QUANTILES:
            if summary.get(key) is not None:
                labels = {"metric": name, "quantile": quantile}
                family.add_sample(family.name, labels, summary[key])

    return use
