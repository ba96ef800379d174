"""A ``prometheus_client`` collector reading every metric the catalogues list, at scrape time.

Metric names become the value of the ``metric`` label of one family per kind, so the number of
Prometheus series follows the number of metrics (bounded by the app's own caps), never the
traffic. Each registered kind builds its own families (``Kind.exposition``, in its package's
``exposition.py``), queueing its reads on one :class:`Plan`; everything is then read from Redis
in a few pipelined round trips per scrape, through each model's own read hooks (``*_reads()``:
the commands, and how to parse their replies), so every process of the site and every scraper
see the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from ..core.connection import get_redis_connection
from ..core.reads import Read, run_reads
from ..kinds import registered

Parse = Callable[[list[Any]], Any]


@dataclass
class Plan:
    """The reads of one scrape, each with what to do with its parsed answer."""

    reads: list[Read] = field(default_factory=list)
    parsers: list[tuple[int, int, Parse, Callable[[Any], None]]] = field(default_factory=list)

    def add(self, hook: tuple[Sequence[Read], Parse], use: Callable[[Any], None]) -> None:
        commands, parse = hook
        self.parsers.append((len(self.reads), len(commands), parse, use))
        self.reads += commands

    def run(self) -> None:
        replies = run_reads(get_redis_connection(), self.reads, raise_on_error=False)
        for start, size, parse, use in self.parsers:
            answers = replies[start : start + size]
            if not any(isinstance(answer, Exception) for answer in answers):
                use(parse(answers))  # a key of another type under our PREFIX: left out


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
