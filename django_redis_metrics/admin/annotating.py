"""The annotations a chart draws: those of its range, read in the same pipeline as its data.

A chart builder queues :func:`read_op` for its range (see :func:`bounds`) beside its own reads
and hands the reply to :func:`attach`; a page of period charts ending now queues one
:func:`periods_read_op` for all of them. Each annotation reaches the payload with its time
labelled in the chart's zone and ``x``, where the chart draws it: the start of the slice
holding it (the index of its period on calendar charts), so its marker sits on the point whose
value it may explain. A chart shows at most ``MAX_SHOWN`` (the newest) and says so.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from datetime import datetime, tzinfo
from typing import Any

from ..annotations.store import parse, range_op
from ..core.periods import Period, period_class
from ..core.steps import Op
from . import labels
from .charts import Chart, Span

#: Most annotations one chart draws (the newest of its range).
MAX_SHOWN = 200


def bounds(chart: Chart) -> tuple[float, float]:
    """The first and last instant ``chart`` covers: from its first point to the end of its
    last slice or period."""
    if not chart.x:
        return 0.0, -1.0
    if chart.step is not None:
        end: float = chart.x[-1] + chart.step
    else:
        kind = period_class(chart.period or "day")
        end = kind.containing(chart.x[-1], chart.zone or labels.site_zone()).end_ts
    return float(chart.x[0]), math.nextafter(end, -math.inf)


def read_op(where: Chart | Span) -> Op:
    """The read of the newest ``MAX_SHOWN`` annotations of a chart's range (or of the chart
    of ``span``'s slices, before it is built)."""
    if isinstance(where, Span):
        start, end = float(where.first), math.nextafter(where.last + where.step, -math.inf)
    else:
        start, end = bounds(where)
    return range_op(start, max(start, end), MAX_SHOWN)


def periods_read_op(periods: Sequence[Period]) -> Op:
    """The read of the newest ``MAX_SHOWN`` annotations from the first of ``periods`` to the
    end of the last: for a page of period charts ending now, whose newest ``MAX_SHOWN`` each
    are among them."""
    start = min(period.start_ts for period in periods)
    end = max(period.end_ts for period in periods)
    return range_op(start, math.nextafter(end, -math.inf), MAX_SHOWN)


def attach(chart: Chart, reply: Sequence[Any]) -> Chart:
    """Give ``chart`` the annotations of a :func:`read_op` reply that fall in its range."""
    start, end = bounds(chart)
    found = [item for item in parse(reply) if start <= item["when"] <= end]
    zone = chart.zone or labels.chart_zone(chart.step)
    chart.annotations = [
        {**item, "label": label(item["when"], zone), "x": position(chart, item)} for item in found
    ]
    if len(found) >= MAX_SHOWN:
        chart.notes.append(f"Only the newest {MAX_SHOWN} annotations of this range are drawn.")
    return chart


def label(when: float, zone: tzinfo) -> str:
    """``2026-11-26 07:00:12``: an annotation's time as the chart's labels write times (what
    ``labels.instant_label`` gives to the second, by ``strftime``: Django's ``dateformat``
    costs about 40 us a label, most of a chart's read with a few hundred annotations)."""
    return datetime.fromtimestamp(when, zone).strftime("%Y-%m-%d %H:%M:%S")


def position(chart: Chart, item: dict[str, Any]) -> float:
    """Where ``chart`` draws the annotation: its slice's start, or its period's index."""
    at = max(0, bisect.bisect_right(chart.x, item["when"]) - 1)
    return at if chart.period else chart.x[at]
