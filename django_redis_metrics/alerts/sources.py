"""What an alert watches, and how its value over a window is read (as steps, ``core/steps.py``).

* a ``Counter`` (a metric, which adds up its series, or one series): the sum of the newest
  slices covering the window;
* a ``Statistic`` (or series): one measure (``"p95"``, ``"mean"``...) of its slices in the
  window merged into one summary;
* a ``Gauge`` series or unlabelled gauge: its latest value, if set within the window;
* a queryset of counters or statistics (``Counter.objects.filter(...)``): as above, over every
  selected series together.

The window is read at the finest precision whose kept samples cover it (:func:`plan`).
"""

from __future__ import annotations

import math
from typing import Any

from ..core.gather import gather_steps
from ..core.keys import to_str
from ..core.labels.aggregate import with_series
from ..core.queries.measures import _readable
from ..core.queries.queryset import MetricQuerySet
from ..core.sliced import SlicedMetric
from ..core.steps import Steps
from ..counter import Counter
from ..gauge import Gauge
from ..statistic import Statistic, histogram

#: The measures of a statistic an alert may watch (``Statistic.summary``'s keys).
MEASURES = ("count", "sum", "min", "max", "mean", "stddev", "p50", "p95", "p99")
#: The kinds an alert watches.
KINDS = (Counter, Statistic, Gauge)
Source = Counter | Statistic | Gauge | MetricQuerySet[Any]


def plan(metric: SlicedMetric, over: int) -> tuple[int, int]:
    """``(precision, slices)``: the finest precision of ``metric`` whose kept samples cover the
    last ``over`` seconds, and how many of its slices do: the current one (partly elapsed)
    and the ``ceil(over / precision)`` before it, so the window holds at least ``over``
    seconds and at most one slice more, wherever in its slice the evaluation falls."""
    for precision in sorted(metric.precisions):
        slices = math.ceil(over / precision) + 1
        if slices <= min(metric.samples, type(metric).MAX_RECENT):  # type: ignore[attr-defined]
            return precision, slices
    raise ValueError(
        f"No precision of {metric.LABEL} {metric.name!r} covers over={over} s: it keeps "
        f"{metric.samples} slices of {', '.join(map(str, metric.precisions))} s."
    )


def model_of(source: object) -> type[Any]:
    """The kind of metric ``source`` reads."""
    return source.model if isinstance(source, MetricQuerySet) else type(source)


def value_steps(source: Source, measure: str | None, over: int, now: float) -> Steps[Any]:
    """The value of ``source`` over the ``over`` seconds up to ``now`` (``None``: no data)."""
    if isinstance(source, MetricQuerySet):
        rows = _readable((yield from source._selected_steps()))
        found = yield from gather_steps([_window_steps(row, over, now) for row in rows])
        for item in found:
            if isinstance(item, Exception):
                raise item
        return _combined(source.model, [v for part in found for v in part], measure)
    if isinstance(source, Gauge):
        latest = yield from source._latest_steps()
        return latest[1] if latest is not None and latest[0] > now - over else None
    parts = yield from with_series(source, lambda m: _window_steps(m, over, now), _joined)
    return _combined(type(source), parts, measure)


def _joined(own: list[Any], theirs: Any) -> list[Any]:
    return [*own, *(value for part in theirs for value in part)]


def _window_steps(metric: Any, over: int, now: float) -> Steps[list[Any]]:
    """The raw values of ``metric``'s own slices covering the window (``None`` for empty)."""
    precision, slices = plan(metric, over)
    found = yield from metric._recent_steps_of(
        precision, slices, now, metric.MAX_RECENT, metric.READ_CHUNK
    )
    return [value for _, value in found if value is not None]


def _combined(model: type[Any], values: list[Any], measure: str | None) -> Any:
    if issubclass(model, Counter):
        return sum(int(to_str(value)) for value in values)
    summary = histogram.parse_merged(values)
    return summary[measure or "mean"]
