"""Reading archived periods of unique bitmaps, estimates and event series back from the
archive's table (``ARCHIVE_DATABASE``).

A read of a metric's own name reads the rows of every series of it (``metric``), a read of one
series (``labels()``) that series' rows only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..conf import conf
from ..core.labels.labelling import SEPARATOR
from .missing import archive_tables
from .models import ArchivedPeriod


def archived_rows(
    kind: str, name: str, period: str, starts: Iterable[int], *, data: bool = False
) -> dict[int, list[tuple[int, Any]]]:
    """``{start: [(count, data), ...]}``: the rows of each of ``starts`` (one per series)."""
    wanted = sorted(set(starts))
    if not wanted:
        return {}
    rows = ArchivedPeriod.objects.using(conf.ARCHIVE_DATABASE).filter(
        kind=kind, period=period, start__gte=wanted[0], start__lte=wanted[-1]
    )
    rows = rows.filter(series=name) if SEPARATOR in name else rows.filter(metric=name)
    fields = ("start", "count", "data") if data else ("start", "count")
    found: dict[int, list[tuple[int, Any]]] = {}
    keep = set(wanted)
    with archive_tables(conf.ARCHIVE_DATABASE):
        for row in rows.values_list(*fields):
            if row[0] in keep:
                found.setdefault(row[0], []).append((row[1], row[2] if data else None))
    return found
