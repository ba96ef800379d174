"""The statistics' Prometheus families: one histogram per statistic, a histogram per series.

Built from the lifetime histogram each series keeps in its meta hash (``statistic_record.lua``:
``b<bucket>`` the values of each log-scale bucket since the statistic was first written,
never trimmed, with ``n`` and ``s`` the count and sum), so the exposed buckets are cumulative
and only grow from one scrape to the next, as ``rate()`` and ``histogram_quantile`` need. The
per-slice histograms would not do: their slices are trimmed, which Prometheus would read as
counter resets.

Each bucket holding values is exposed with its bounds (``histogram.py``: the magnitudes
``(g^(k-1), g^k]``, ``g = 2^(1/8)``), lower and upper, so ``histogram_quantile``'s linear
interpolation never spans more than one bucket; and every series of a metric with the bounds
of all of them, so that ``sum by (le)`` over its series adds like with like. The quantile it
gives lies in the bucket holding the exact one, within :data:`QUANTILE_ERROR` (``g - 1``,
9.05 %) of it; ``Statistic.percentile`` estimates at the bucket's geometric middle, within
4.33 %. ``+Inf`` and ``_count`` are every value recorded (values recorded before the lifetime
histogram existed, or in a bucket past the ``LIFETIME_BUCKETS`` kept, count only there); a
series holding negative values has no ``_count`` nor ``_sum`` (OpenMetrics: its sum is no
counter), its ``+Inf`` bucket being its count.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client.utils import floatToGoString

from ..core.keys import to_str
from ..core.steps import Steps
from ..exposition.families import Draft, catalogue_steps, meta_steps, metrics, renamed
from .histogram import GAMMA, OFFSET, PER_DOUBLING
from .keys import KIND

#: Most lifetime buckets a series keeps (as ``statistic_record.lua``'s ``LIFETIME_BUCKETS``).
LIFETIME_BUCKETS = 192
#: How far ``histogram_quantile`` of the exposed buckets may be from the exact quantile,
#: relative to it (the width of one bucket: about 9.05 %).
QUANTILE_ERROR = GAMMA - 1


def statistic_families() -> Steps[list[Draft]]:
    members = yield from catalogue_steps(KIND)
    answers = yield from meta_steps(KIND, members, None)
    drafts = []
    for name, series in metrics(members, answers):
        draft = Draft(
            name,
            KIND,
            "histogram",
            f"Statistic {name!r}: every value recorded since it was first written, in "
            f"log-scale buckets (histogram_quantile within {QUANTILE_ERROR:.2%}).",
        )
        lifetimes = [
            (renamed(labels, "le"), Lifetime.of(meta))
            for labels, meta in zip(series.labels, series.answers, strict=True)
        ]
        edges = sorted({edge for _, lifetime in lifetimes for edge in lifetime.bounds})
        for labels, lifetime in lifetimes:
            lifetime.add_to(draft, labels, edges)
        drafts.append(draft)
    return drafts


def bounds(index: int) -> tuple[float, float]:
    """The lower and upper bound of the values of bucket ``index`` (``histogram.bucket``)."""
    if index == 0:
        return 0.0, 0.0
    k = abs(index) - OFFSET
    low, high = 2.0 ** ((k - 1) / PER_DOUBLING), 2.0 ** (k / PER_DOUBLING)
    return (low, high) if index > 0 else (-high, -low)


@dataclass(frozen=True)
class Lifetime:
    """A series' lifetime histogram as its meta hash holds it."""

    count: int
    total: float
    #: ``(upper bound, values)`` of each bucket holding values, sorted.
    buckets: list[tuple[float, int]]
    #: The bounds of those buckets: upper, and lower too.
    bounds: list[float]

    @classmethod
    def of(cls, meta: Mapping[Any, Any]) -> Lifetime:
        fields = {to_str(k): v for k, v in meta.items()}
        indexes = sorted(
            (int(field[1:]), int(value))
            for field, value in fields.items()
            if field[:1] == "b" and field != "bn"
        )
        edges = [bounds(index) for index, _ in indexes]
        return cls(
            int(to_str(fields.get("n", b"0"))),
            float(to_str(fields.get("s", b"0"))),
            [(high, number) for (_, high), (_, number) in zip(edges, indexes, strict=True)],
            [edge for pair in edges for edge in pair],
        )

    def add_to(self, draft: Draft, labels: dict[str, str], edges: list[float]) -> None:
        """``_bucket`` at each of ``edges`` (the bounds of every series of the metric, so
        that ``sum by (le)`` adds like with like), ``+Inf``, ``_count`` and ``_sum`` (not for
        a series holding negative values)."""
        seen, at, buckets = 0, 0, self.buckets
        for edge in edges:
            while at < len(buckets) and buckets[at][0] <= edge:
                seen += buckets[at][1]
                at += 1
            draft.add("_bucket", {**labels, "le": le(edge)}, seen)
        count = max(self.count, seen)
        draft.add("_bucket", {**labels, "le": "+Inf"}, count)
        if self.total >= 0 and not (buckets and buckets[0][0] < 0):
            # OpenMetrics: a histogram with negative buckets has no sum (it would not be a
            # counter), and then no count either (the +Inf bucket is the count).
            draft.add("_count", labels, count)
            draft.add("_sum", labels, self.total)


def le(bound: float) -> str:
    """A bucket bound as Prometheus writes an ``le`` (Go's float formatting)."""
    return str(floatToGoString(bound))  # type: ignore[no-untyped-call]
