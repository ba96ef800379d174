"""Query planning without I/O: the days a range names, its cover split into the part that is
over and the running part, and the script calls of a retention table.

The cover itself (whole months, whole ISO weeks, then days; cached) is ``core/cover.py``'s,
shared with ``UniqueEstimate``. Kept free of I/O so that the sync and async APIs plan their
queries the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import date, datetime, tzinfo
from typing import Any

from ..core.periods import Period, checked_day
from ..core.timeutil import When, to_timestamp


def local_date(when: When | date, zone: tzinfo) -> date:
    """The day holding ``when`` in ``zone``; a ``date`` (of the years 2 to 9998) names its day
    directly."""
    if isinstance(when, date) and not isinstance(when, datetime):
        return checked_day(when, "a date")
    return datetime.fromtimestamp(to_timestamp(when), zone).date()


def split(periods: tuple[Period, ...], settled: float) -> tuple[tuple[Period, ...], ...]:
    """``periods`` as (those over by ``settled``, those still running), each part if any."""
    over = tuple(p for p in periods if p.end_ts <= settled)
    running = tuple(p for p in periods if p.end_ts > settled)
    return tuple(part for part in (over, running) if part)


def cohort_calls(
    keys: list[str],
    temp: Callable[[int], str],
    most_sources: int,
    returning: list[str] | None = None,
) -> list[tuple[int, list[str]]]:
    """The script calls of a retention table over the period ``keys``: per row, its first
    period's key, up to ``most_sources - 1`` later ones (of ``returning``, the same periods'
    keys of a second bitmap, if given) and a temporary key ``temp(n)``."""
    step = most_sources - 1
    laters = keys if returning is None else returning
    calls: list[tuple[int, list[str]]] = []
    for row in range(len(keys)):
        later = laters[row + 1 :]
        for chunk in range(0, max(len(later), 1), step):
            calls.append((row, [keys[row], *later[chunk : chunk + step], temp(len(calls))]))
    return calls


def cohort_rows(
    periods: int, calls: list[tuple[int, list[str]]], replies: Sequence[Any]
) -> list[list[int]]:
    """The table from the calls' replies (each ``[head count, count with each later key]``)."""
    rows: list[list[int]] = [[] for _ in range(periods)]
    for (row, _), reply in zip(calls, replies, strict=True):
        if isinstance(reply, Exception):
            raise reply
        counts = [int(v) for v in reply]
        rows[row] += counts[1:] if rows[row] else counts
    return rows
