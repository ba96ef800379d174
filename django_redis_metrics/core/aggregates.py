"""A queryset's aggregates and orderings by value (``core/queryset.py``).

``total(precision)``, ``series(precision)`` and ``group_by(...)`` add the samples of the
selected series, so they are defined where samples are counts: counters. Each series' own read
(``Counter._series_steps``) runs in one shared pipeline per round (``core/gather.py``): one
round trip per Redis node for series of compact hashes (at most a few hundred samples).

Ordering: ``total`` is a counter's sum over its coarsest precision (a statistic's, a gauge's or
a set's "total" would mean something else for each, so they refuse it); ``last_seen`` is the
start of the newest slice holding data at any precision (one ``HKEYS`` per precision), for the
kinds kept in slices (counters, statistics, gauges). A row with no data has total 0 and
``last_seen`` ``None``, which sorts as the oldest.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from .drive import adrive, drive
from .gather import gather_steps
from .keys import to_str
from .labelling import OTHER
from .steps import Op, Pipe, Steps

#: The kinds whose samples are counts, so that the aggregates may add them.
COUNTING = ("counter",)


def _counting(model: type[Any], what: str) -> None:
    if model.KIND not in COUNTING:
        raise TypeError(
            f"{what} adds counts: it is for counters, not {model.LABEL}s (read each "
            f"{model.LABEL}'s own methods instead)."
        )


def check_value(model: type[Any], field: str) -> None:
    """A ``ValueError`` if ``model``'s rows cannot be ordered by ``field``."""
    if field == "total" and model.KIND not in COUNTING:
        raise ValueError(f"order_by('total') is for counters; {model.LABEL}s have no total.")
    if field == "last_seen" and not hasattr(model, "precisions"):
        raise ValueError(
            f"order_by('last_seen') is for metrics kept in slices, not {model.LABEL}s."
        )


def _readable(rows: Sequence[Any]) -> list[Any]:
    """The rows that hold samples: not a labelled metric itself (its series hold them)."""
    return [row for row in rows if not (row.label_names and row.family is None)]


def values_steps(model: type[Any], rows: Sequence[Any], field: str) -> Steps[list[Any]]:
    """Each row's ``total`` or ``last_seen`` (``None`` read as 0: oldest), in order."""
    reads: list[Steps[Any]] = []
    for row in rows:
        if row.label_names and row.family is None:
            reads.append(_constant(0))
        elif field == "total":
            reads.append(row._series_steps(max(row.precisions)))
        else:
            reads.append(_last_seen_steps(row))
    results = yield from gather_steps(reads)
    values = []
    for result in results:
        if isinstance(result, Exception):
            raise result
        values.append(sum(n for _, n in result) if isinstance(result, list) else result)
    return values


def _constant(value: Any) -> Steps[Any]:
    return value
    yield  # a generator of no step


def _last_seen_steps(row: Any) -> Steps[int]:
    replies = yield Pipe([Op("hkeys", row.key(p)) for p in row.precisions])
    starts = [int(to_str(start)) for reply in replies for start in reply]
    return max(starts, default=0)


def _series_of(rows: Sequence[Any], precision: int | None) -> Steps[list[list[tuple[int, int]]]]:
    """Each readable row's samples of ``precision`` (each one's coarsest if ``None``), checked
    first: a row without that precision is a ``ValueError``, nothing read."""
    reads = []
    for row in rows:
        chosen = max(row.precisions) if precision is None else row._check_precision(precision)
        reads.append(row._series_steps(chosen))
    results = yield from gather_steps(reads)
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


def total_steps(model: type[Any], selected: Steps[list[Any]], precision: int | None) -> Steps[int]:
    _counting(model, "total()")
    rows = _readable((yield from selected))
    series = yield from _series_of(rows, precision)
    return sum(count for samples in series for _, count in samples)


def series_steps(
    model: type[Any], selected: Steps[list[Any]], precision: int
) -> Steps[list[tuple[int, int]]]:
    _counting(model, "series()")
    rows = _readable((yield from selected))
    return _summed((yield from _series_of(rows, precision)))


def _summed(series: Sequence[Sequence[tuple[int, int]]]) -> list[tuple[int, int]]:
    sums: dict[int, int] = defaultdict(int)
    for samples in series:
        for start, count in samples:
            sums[start] += count
    return sorted(sums.items())


class Grouped:
    """``queryset.group_by(*labels)``: the aggregates per label value (a tuple of values for
    several labels). A series without those labels is left out, but for its metric's
    ``__other__`` series, grouped under ``"__other__"``, so that the groups add up to the
    metric's total; a plain metric is left out."""

    def __init__(
        self, model: type[Any], selected: Callable[[], Steps[list[Any]]], labels: Sequence[str]
    ) -> None:
        if not labels or not all(isinstance(label, str) and label for label in labels):
            raise TypeError(f"group_by() takes label names, not {labels!r}.")
        _counting(model, "group_by()")
        self.model, self.selected, self.labels = model, selected, tuple(labels)

    def _key(self, row: Any) -> Any:
        if row.family is None:
            return None
        if not row.label_pairs:
            return OTHER if len(self.labels) == 1 else (OTHER,) * len(self.labels)
        pairs = dict(row.label_pairs)
        if not all(label in pairs for label in self.labels):
            return None
        values = tuple(pairs[label] for label in self.labels)
        return values[0] if len(values) == 1 else values

    def _groups_steps(self, precision: int | None) -> Steps[dict[Any, list[Any]]]:
        rows = _readable((yield from self.selected()))
        keyed = [(self._key(row), row) for row in rows]
        kept = [(key, row) for key, row in keyed if key is not None]
        series = yield from _series_of([row for _, row in kept], precision)
        groups: dict[Any, list[Any]] = defaultdict(list)
        for (key, _), samples in zip(kept, series, strict=True):
            groups[key].append(samples)
        return dict(groups)

    def _total_steps(self, precision: int | None) -> Steps[dict[Any, int]]:
        groups = yield from self._groups_steps(precision)
        return {key: sum(n for s in many for _, n in s) for key, many in groups.items()}

    def _series_steps(self, precision: int) -> Steps[dict[Any, list[tuple[int, int]]]]:
        groups = yield from self._groups_steps(precision)
        return {key: _summed(many) for key, many in groups.items()}

    def total(self, precision: int | None = None) -> dict[Any, int]:
        """``{label value: the total of its series}``: one round trip per Redis node."""
        return drive(self._total_steps(precision))

    async def atotal(self, precision: int | None = None) -> dict[Any, int]:
        return await adrive(self._total_steps(precision))

    def series(self, precision: int) -> dict[Any, list[tuple[int, int]]]:
        """``{label value: [(slice start, count), ...]}`` summed per slice over its series."""
        return drive(self._series_steps(precision))

    async def aseries(self, precision: int) -> dict[Any, list[tuple[int, int]]]:
        return await adrive(self._series_steps(precision))
