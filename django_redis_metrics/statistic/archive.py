"""The statistic's archiver: each closed slice's count, sum, squared deviations, min, max and
histogram buckets (``archive/sliced.py`` walks the catalogue and upserts).

``sum_squares`` keeps the slice's *sum of squared deviations from its mean* (``m2``, as Redis
does: ``histogram.Slice``), not the raw sum of squares, whose difference with ``sum²/count``
would lose every digit of a small spread around a large mean. ``histogram`` keeps the buckets
(``{bucket: count}``), so quantiles of any archived range keep the 4.33 % bound.
"""

from __future__ import annotations

from typing import Any

from ..archive.base import ArchiveContext, ArchiveReport
from ..archive.history import HistorySpec
from ..archive.models import ArchivedSlice
from ..archive.sliced import archive_sliced
from ..core.connection import RedisClient
from . import histogram
from .histogram import Slice
from .keys import KIND

FIELDS = ("metric", "count", "total", "sum_squares", "minimum", "maximum", "histogram")


def row(series: str, metric: str, precision: int, start: int, raw: Any) -> ArchivedSlice:
    found = Slice.from_text(raw)
    return ArchivedSlice(
        kind=KIND,
        series=series,
        metric=metric,
        precision=precision,
        start=start,
        count=found.count,
        total=found.total,
        sum_squares=found.m2,
        minimum=found.low,
        maximum=found.high,
        histogram={str(bucket): count for bucket, count in found.buckets},
    )


def from_row(
    count: int, total: float, m2: float, low: float, high: float, buckets: dict[str, int]
) -> Slice:
    """The slice an archived row keeps, ready to merge (``histogram.merge``)."""
    pairs = sorted((int(bucket), number) for bucket, number in (buckets or {}).items())
    return Slice(count, total, m2, low, high, pairs)


def archive_statistics(client: RedisClient, context: ArchiveContext) -> ArchiveReport:
    """One archive pass over every statistic series (labelled ones too)."""
    return archive_sliced(KIND, client, context, row, FIELDS)


def _merged(starts: list[int], per_series: list[dict[int, Any]]) -> list[tuple[int, Any]]:
    """Every slice of the range (count 0 where nothing was recorded), the series merged."""
    grouped: dict[int, list[Slice]] = {start: [] for start in starts}
    for slices in per_series:
        for start, found in slices.items():
            grouped[start].append(found)
    return [(start, histogram.parse_merged_slices(found)) for start, found in grouped.items()]


#: How ``Statistic.history`` reads and merges its slices (``archive/history.py``).
HISTORY = HistorySpec(
    KIND,
    ("count", "total", "sum_squares", "minimum", "maximum", "histogram"),
    Slice.from_text,
    from_row,
    _merged,
)
