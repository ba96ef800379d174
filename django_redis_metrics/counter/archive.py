"""The counter's archiver: each closed slice's count, kept in ``ArchivedSlice.count``
(``archive/sliced.py`` walks the catalogue and upserts)."""

from __future__ import annotations

from typing import Any

from ..archive.base import ArchiveContext, ArchiveReport
from ..archive.history import HistorySpec
from ..archive.models import ArchivedSlice
from ..archive.sliced import archive_sliced
from ..core.connection import RedisClient
from ..core.keys import to_str
from .keys import KIND

FIELDS = ("metric", "count")


def row(series: str, metric: str, precision: int, start: int, raw: Any) -> ArchivedSlice:
    return ArchivedSlice(
        kind=KIND,
        series=series,
        metric=metric,
        precision=precision,
        start=start,
        count=int(to_str(raw)),
    )


def archive_counters(client: RedisClient, context: ArchiveContext) -> ArchiveReport:
    """One archive pass over every counter series (labelled ones too)."""
    return archive_sliced(KIND, client, context, row, FIELDS)


def _added(starts: list[int], per_series: list[dict[int, Any]]) -> list[tuple[int, Any]]:
    """Every slice of the range, zero-filled, the series' counts added."""
    totals = dict.fromkeys(starts, 0)
    for slices in per_series:
        for start, count in slices.items():
            totals[start] += count
    return list(totals.items())


#: How ``Counter.history`` reads and adds its slices (``archive/history.py``).
HISTORY = HistorySpec(KIND, ("count",), lambda raw: int(to_str(raw)), int, _added)
