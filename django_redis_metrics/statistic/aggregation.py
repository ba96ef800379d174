"""How a queryset's aggregates combine statistics (``core/queries/measures.py``): the stored slices
of the selected series merged into one summary, as ``Statistic.summary`` gives for one slice
(count, sum, min, max, mean, stddev and quantiles within the histogram's error bound)."""

from __future__ import annotations

from typing import Any

from ..core.queries.measures import Measure, register
from ..core.steps import Steps
from . import histogram
from .histogram import Slice, Summary


def _slices(row: Any, precision: int) -> Steps[list[tuple[int, Any]]]:
    stored = yield from row._slices_steps(precision, row.READ_CHUNK)
    return [(start, Slice.from_text(text)) for start, text in stored]


def combine(slices: list[Slice]) -> Summary:
    """The summary of ``slices`` taken as one (``histogram.empty()`` if none holds a value)."""
    merged = histogram.merge(slices)
    return histogram.empty() if merged is None else histogram.summarize(merged)


MEASURE = Measure(_slices, combine)
register("statistic", MEASURE)
