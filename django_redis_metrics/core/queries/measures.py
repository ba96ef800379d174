"""A queryset's aggregates and orderings by value (``core/queryset.py``).

``total(precision)``, ``series(precision)`` and ``group_by(...)`` combine the samples of the
selected series, as each kind's :class:`Measure` says: a counter's counts add up (registered
here), a statistic's slices merge into one summary (``statistic/aggregation.py``); other kinds
refuse them. Each series' own read runs in one shared pipeline per round
(``core/gather.py``): one round trip per Redis node for series of compact hashes.

Ordering: ``total`` is a counter's sum over its coarsest precision (a statistic's, a gauge's or
a set's "total" would mean something else for each, so they refuse it); ``last_seen`` is the
start of the newest slice holding data at any precision (one ``HKEYS`` per precision), for the
kinds kept in slices (counters, statistics, gauges). A row with no data has total 0 and
``last_seen`` 0, which sorts as the oldest.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..drive import adrive, drive
from ..gather import gather_steps
from ..keys import to_str
from ..labels.labelling import OTHER
from ..steps import Op, Pipe, Steps

#: The kinds whose samples are counts, so that rows may be ordered by their total.
COUNTING = ("counter",)


@dataclass(frozen=True)
class Measure:
    """How the aggregates read and combine one kind's samples."""

    #: A series' samples of a precision (checked): ``[(slice start, value), ...]``.
    read: Callable[[Any, int], Steps[list[tuple[int, Any]]]]
    #: Many values (of several slices, or series) as one; called with none too.
    combine: Callable[[list[Any]], Any]


def _counts(row: Any, precision: int) -> Steps[list[tuple[int, Any]]]:
    return row._series_steps(precision)  # type: ignore[no-any-return]


#: Each kind's measure, by kind name (``register`` adds one).
MEASURES: dict[str, Measure] = {"counter": Measure(_counts, sum)}


def register(kind: str, measure: Measure) -> None:
    """Let the aggregates combine the samples of ``kind`` as ``measure`` says."""
    MEASURES[kind] = measure


def measure_of(model: type[Any], what: str) -> Measure:
    """``model``'s measure; a ``TypeError`` for a kind without one."""
    found = MEASURES.get(model.KIND)
    if found is None:
        kinds = ", ".join(sorted(MEASURES))
        raise TypeError(
            f"{what} combines samples of {kinds} metrics, not those of the {model.LABEL} kind "
            "(read each one's own methods instead)."
        )
    return found


def check_value(model: type[Any], field: str) -> None:
    """A ``ValueError`` if ``model``'s rows cannot be ordered by ``field``."""
    if field == "total" and model.KIND not in COUNTING:
        raise ValueError(f"order_by('total') is for counters, not the {model.LABEL} kind.")
    if field == "last_seen" and not hasattr(model, "precisions"):
        raise ValueError(
            f"order_by('last_seen') is for metrics kept in slices, not the {model.LABEL} kind."
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


def _series_of(
    measure: Measure, rows: Sequence[Any], precision: int | None
) -> Steps[list[list[tuple[int, Any]]]]:
    """Each readable row's samples of ``precision`` (each one's coarsest if ``None``), checked
    first: a row without that precision is a ``ValueError``, nothing read."""
    reads = []
    for row in rows:
        chosen = max(row.precisions) if precision is None else row._check_precision(precision)
        reads.append(measure.read(row, chosen))
    results = yield from gather_steps(reads)
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


def total_steps(model: type[Any], selected: Steps[list[Any]], precision: int | None) -> Steps[Any]:
    measure = measure_of(model, "total()")
    rows = _readable((yield from selected))
    series = yield from _series_of(measure, rows, precision)
    return measure.combine([value for samples in series for _, value in samples])


def series_steps(
    model: type[Any], selected: Steps[list[Any]], precision: int
) -> Steps[list[tuple[int, Any]]]:
    measure = measure_of(model, "series()")
    rows = _readable((yield from selected))
    return _per_slice(measure, (yield from _series_of(measure, rows, precision)))


def _per_slice(
    measure: Measure, series: Sequence[Sequence[tuple[int, Any]]]
) -> list[tuple[int, Any]]:
    slices: dict[int, list[Any]] = defaultdict(list)
    for samples in series:
        for start, value in samples:
            slices[start].append(value)
    return [(start, measure.combine(values)) for start, values in sorted(slices.items())]


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
        self.measure = measure_of(model, "group_by()")
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
        series = yield from _series_of(self.measure, [row for _, row in kept], precision)
        groups: dict[Any, list[Any]] = defaultdict(list)
        for (key, _), samples in zip(kept, series, strict=True):
            groups[key].append(samples)
        return dict(groups)

    def _total_steps(self, precision: int | None) -> Steps[dict[Any, Any]]:
        groups = yield from self._groups_steps(precision)
        combine = self.measure.combine
        return {key: combine([v for s in many for _, v in s]) for key, many in groups.items()}

    def _series_steps(self, precision: int) -> Steps[dict[Any, list[tuple[int, Any]]]]:
        groups = yield from self._groups_steps(precision)
        return {key: _per_slice(self.measure, many) for key, many in groups.items()}

    def total(self, precision: int | None = None) -> dict[Any, Any]:
        """``{label value: the total of its series}``: one round trip per Redis node."""
        return drive(self._total_steps(precision))

    async def atotal(self, precision: int | None = None) -> dict[Any, Any]:
        return await adrive(self._total_steps(precision))

    def series(self, precision: int) -> dict[Any, list[tuple[int, Any]]]:
        """``{label value: [(slice start, count), ...]}`` summed per slice over its series."""
        return drive(self._series_steps(precision))

    async def aseries(self, precision: int) -> dict[Any, list[tuple[int, Any]]]:
        return await adrive(self._series_steps(precision))
