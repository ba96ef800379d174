"""A ``prometheus_client`` collector reading every metric the catalogues list, at scrape time.

Metric names become the value of the ``metric`` label of one family per kind, so the number of
Prometheus series follows the number of metrics (bounded by the app's own caps), never the
traffic. Everything is read from Redis in a few pipelined round trips per scrape, so every
process of the site (and every scraper) sees the same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from ..bitmaps import UniqueBitmap
from ..core.connection import RedisClient, get_redis_connection
from ..core.periods import period_class
from ..counter import Counter
from ..estimates import UniqueEstimate
from .reads import Read, run_reads

#: Prefix of every family this app exposes.
NAMESPACE = "django_redis_metrics"


@dataclass
class Source:
    """One kind's part of a scrape: the reads it needs, then its families from the replies."""

    reads: list[Read]
    families: Callable[[Sequence[Any]], Iterable[Metric]]


def counters(client: RedisClient) -> Source:
    """Every counter's lifetime total, as a Prometheus counter."""
    listed = Counter.objects.all()
    reads: list[Read] = [(method, args) for c in listed for method, args in c.lifetime_total_reads()]

    def families(replies: Sequence[Any]) -> Iterable[Metric]:
        family = CounterMetricFamily(
            f"{NAMESPACE}_counter",
            "Increments of each counter since it was first written.",
            labels=["metric"],
        )
        for counter, reply in zip(listed, replies, strict=True):
            if not isinstance(reply, Exception):
                family.add_metric([counter.name], Counter.parse_lifetime_total([reply]))
        yield family

    return Source(reads, families)


def bitmaps(client: RedisClient) -> Source:
    """Distinct users of the current period of every ``UniqueBitmap``, one gauge per period."""
    listed = UniqueBitmap.objects.all()
    keys = [(b, p, b.key(period_class(p).containing(None))) for b in listed for p in b.periods]

    def families(replies: Sequence[Any]) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            f"{NAMESPACE}_unique_users",
            "Distinct users marked in the current period of each unique-users bitmap.",
            labels=["metric", "period"],
        )
        for (bitmap, period, _key), reply in zip(keys, replies, strict=True):
            if not isinstance(reply, Exception):
                family.add_metric([bitmap.name, period], int(reply))
        yield family

    return Source([("bitcount", (key,)) for _b, _p, key in keys], families)


def estimates(client: RedisClient) -> Source:
    """The estimated distinct items of the current period of every ``UniqueEstimate``."""
    listed = UniqueEstimate.objects.all()
    keys = [(e, p, e.key(period_class(p).containing(None))) for e in listed for p in e.periods]

    def families(replies: Sequence[Any]) -> Iterable[Metric]:
        family = GaugeMetricFamily(
            f"{NAMESPACE}_unique_estimate",
            "Distinct items added in the current period of each HyperLogLog estimate "
            "(about 0.81 % standard error).",
            labels=["metric", "period"],
        )
        for (estimate, period, _key), reply in zip(keys, replies, strict=True):
            if not isinstance(reply, Exception):
                family.add_metric([estimate.name, period], int(reply))
        yield family

    return Source([("pfcount", (key,)) for _e, _p, key in keys], families)


#: The kinds a scrape reads, in the order their families appear.
SOURCES: list[Callable[[RedisClient], Source]] = [counters, bitmaps, estimates]


class MetricsCollector(Collector):
    """Collects every kind of metric from Redis when the registry is scraped."""

    def collect(self) -> Iterator[Metric]:
        client = get_redis_connection()
        sources = [make(client) for make in SOURCES]
        replies = run_reads(client, [read for source in sources for read in source.reads])
        offset = 0
        for source in sources:
            mine = replies[offset : offset + len(source.reads)]
            offset += len(source.reads)
            yield from source.families(mine)
