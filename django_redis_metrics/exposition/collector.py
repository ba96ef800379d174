"""A ``prometheus_client`` collector reading every metric the catalogues list, at scrape time.

Metric names become the value of the ``metric`` label of one family per kind, so the number of
Prometheus series follows the number of metrics (bounded by the app's own caps), never the
traffic. Each registered kind builds its own families (``Kind.exposition``, in its package's
``exposition.py``), queueing its reads on one :class:`Plan`: each model's own read steps
(``core/steps.py``), which the gather driver runs together in a few pipelined round trips per
scrape, so every process of the site and every scraper see the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from ..core.drive import gather
from ..core.steps import Steps
from ..kinds import registered


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


class MetricsCollector(Collector):
    """Collects every registered kind of metric from Redis when the registry is scraped."""

    def collect(self) -> Iterator[Metric]:
        plan = Plan()
        families = list(self._plan(plan))
        plan.run()
        yield from families

    def _plan(self, plan: Plan) -> Iterable[Metric]:
        for kind in registered():
            if kind.exposition is not None:
                yield from kind.exposition(plan)
