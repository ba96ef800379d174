"""A ``prometheus_client`` collector reading every metric the catalogues list, at scrape time.

Metric names become the value of the ``metric`` label of one family per kind, so the number of
Prometheus series follows the number of metrics (bounded by the app's own caps), never the
traffic. Everything is read from Redis in a few pipelined round trips per scrape: each model's
own read steps (``core/steps.py``), run together by the gather driver, so every process of the
site and every scraper see the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..bitmaps import UniqueBitmap
from ..core.drive import gather
from ..core.periods import period_class
from ..core.steps import Op, Steps
from ..counter import Counter
from ..estimates import UniqueEstimate
from ..gauge import Gauge
from ..statistic import Statistic

#: Prefix of every family this app exposes.
NAMESPACE = "django_redis_metrics"
#: The quantiles a statistic's summary carries.
QUANTILES = (("0.5", "p50"), ("0.95", "p95"), ("0.99", "p99"))


@dataclass
class Plan:
    """The reads of one scrape, each with what to do with its answer."""

    reads: list[Steps[Any]] = field(default_factory=list)
    uses: list[Callable[[Any], None]] = field(default_factory=list)

    def add(self, steps: Steps[Any], use: Callable[[Any], None]) -> None:
        self.reads.append(steps)
        self.uses.append(use)

    def run(self) -> None:
        for answer, use in zip(gather(self.reads), self.uses, strict=True):
            if not isinstance(answer, Exception):
                use(answer)  # a key of another type under our PREFIX: left out


def current_period(metric: UniqueBitmap | UniqueEstimate, period: str) -> Any:
    return metric.key(period_class(period).containing(None))


class MetricsCollector(Collector):
    """Collects every kind of metric from Redis when the registry is scraped."""

    def collect(self) -> Iterator[Metric]:
        plan = Plan()
        families = list(self._plan(plan))
        plan.run()
        yield from families

    def _plan(self, plan: Plan) -> Iterable[Metric]:
        counters = CounterMetricFamily(
            f"{NAMESPACE}_counter",
            "Net sum of the increments of each counter since it was first written.",
            labels=["metric"],
        )
        for counter in Counter.objects.all():
            plan.add(counter._lifetime_total_steps(), _adder(counters, counter.name))
        yield counters

        gauges = GaugeMetricFamily(
            f"{NAMESPACE}_gauge", "The latest value set on each gauge.", labels=["metric"]
        )
        for gauge in Gauge.objects.all():
            plan.add(gauge._latest_steps(), _latest_adder(gauges, gauge.name))
        yield gauges

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

        users = GaugeMetricFamily(
            f"{NAMESPACE}_unique_users",
            "Distinct users marked in the current period of each unique-users bitmap.",
            labels=["metric", "period"],
        )
        for bitmap in UniqueBitmap.objects.all():
            for period in bitmap.periods:
                key = current_period(bitmap, period)
                plan.add(_count_steps(Op("bitcount", key)), _adder(users, bitmap.name, period))
        yield users

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
                count = _count_steps(Op("execute_command", "PFCOUNT", key))
                plan.add(count, _adder(estimates, estimate.name, period))
        yield estimates


def _count_steps(read: Op) -> Steps[int]:
    return int((yield read))


def _adder(family: Any, *labels: str) -> Callable[[Any], None]:
    return lambda value: family.add_metric(list(labels), value)


def _latest_adder(family: GaugeMetricFamily, name: str) -> Callable[[Any], None]:
    def use(latest: tuple[float, float] | None) -> None:
        if latest is not None:
            family.add_metric([name], latest[1])

    return use


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
