"""The gauge's archiver: each closed slice's last, min and max (``archive/sliced.py`` walks
the catalogue and upserts). Redis keeps no count of the values set in a slice, so ``count``
is 1: the slice held a value."""

from __future__ import annotations

from typing import Any

from ..archive.base import ArchiveContext, ArchiveReport
from ..archive.history import HistorySpec
from ..archive.models import ArchivedSlice
from ..archive.sliced import archive_sliced
from ..core.connection import RedisClient
from ..core.keys import to_str
from .keys import KIND

FIELDS = ("metric", "count", "last", "minimum", "maximum")


def parse(raw: Any) -> dict[str, float]:
    """A slice's text in Redis (``time,last,min,max``) as ``{"last", "min", "max"}``."""
    _, last, low, high = (float(part) for part in to_str(raw).split(","))
    return {"last": last, "min": low, "max": high}


def row(series: str, metric: str, precision: int, start: int, raw: Any) -> ArchivedSlice:
    found = parse(raw)
    return ArchivedSlice(
        kind=KIND,
        series=series,
        metric=metric,
        precision=precision,
        start=start,
        count=1,
        last=found["last"],
        minimum=found["min"],
        maximum=found["max"],
    )


def archive_gauges(client: RedisClient, context: ArchiveContext) -> ArchiveReport:
    """One archive pass over every gauge series (labelled ones too)."""
    return archive_sliced(KIND, client, context, row, FIELDS)


def from_row(last: float, low: float, high: float) -> dict[str, float]:
    return {"last": last, "min": low, "max": high}


def _grouped(starts: list[int], per_series: list[dict[int, Any]]) -> list[tuple[int, Any]]:
    """The slices where a series held a value: ``last`` added over the series (as
    ``Gauge.group_by`` adds latest values), ``min`` and ``max`` the extremes any held."""
    grouped: dict[int, dict[str, float]] = {}
    for slices in per_series:
        for start, found in slices.items():
            seen = grouped.get(start)
            if seen is None:
                grouped[start] = dict(found)
            else:
                seen["last"] += found["last"]
                seen["min"] = min(seen["min"], found["min"])
                seen["max"] = max(seen["max"], found["max"])
    return sorted(grouped.items())


#: How ``Gauge.history`` reads and groups its slices (``archive/history.py``).
HISTORY = HistorySpec(KIND, ("last", "minimum", "maximum"), parse, from_row, _grouped)
