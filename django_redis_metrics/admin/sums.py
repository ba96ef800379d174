"""A counter's total over a span of the site's time (today so far, yesterday up to this time),
read from the finest precision that still keeps the whole span.

Counter slices are epoch-aligned, so a span is summed from slices only when it starts on a slice
boundary (the site's midnight is one for hour slices wherever the UTC offset is whole hours).
A span ending inside a slice counts that slice's share of it, pro rata: yesterday "up to this
time" is an estimate within its last slice, and says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..core.periods import Day
from ..core.timeutil import slice_start
from ..counter import Counter
from .common import as_int
from .labels import site_zone


@dataclass
class SpanPlan:
    """The slices of one precision that cover ``[start, end]``."""

    precision: int
    starts: list[int]
    #: Count only the share of the last slice before this instant (``None``: all of it).
    cut: float | None = None

    def total(self, values: Sequence[Any]) -> float:
        counts = [as_int(value) for value in values]
        if self.cut is None or not counts:
            return float(sum(counts))
        share = (self.cut - self.starts[-1]) / self.precision
        return sum(counts[:-1]) + counts[-1] * share


def plan_span(
    counter: Counter, start: float, end: float, now: float, *, cut: bool = False
) -> SpanPlan | None:
    """The finest precision whose kept slices cover ``[start, end]`` from a slice boundary;
    with ``cut``, the slice holding ``end`` counts only up to ``end``. ``None`` if no
    precision fits (then the span cannot be told from this counter)."""
    if not math.isfinite(start) or start != int(start) or end < start:
        return None
    for precision in counter.precisions:
        if int(start) % precision:
            continue
        oldest = slice_start(now, precision) - (counter.samples - 1) * precision
        last = slice_start(end, precision)
        if cut and last == end and end > start:
            last -= precision  # the span ends on a boundary: the next slice holds nothing of it
        if int(start) < oldest or last < start:
            continue
        starts = list(range(int(start), last + 1, precision))
        share = end if cut and last + precision > end else None
        return SpanPlan(precision, starts, share)
    return None


@dataclass
class DayPlans:
    """Today so far, and yesterday up to the same wall-clock time, in the site's zone."""

    midnight: float
    today: SpanPlan | None
    yesterday: SpanPlan | None


def day_plans(counter: Counter, now: float) -> DayPlans:
    zone = site_zone()
    today = Day.containing(now, zone)
    yesterday = today.prev
    # Aware arithmetic is wall-clock arithmetic: 14:05 yesterday, even across a DST change.
    same_time = (datetime.fromtimestamp(now, zone) - timedelta(days=1)).timestamp()
    same_time = min(max(same_time, yesterday.start_ts), today.start_ts)
    return DayPlans(
        midnight=today.start_ts,
        today=plan_span(counter, today.start_ts, now, now),
        yesterday=plan_span(counter, yesterday.start_ts, same_time, now, cut=True),
    )
