"""``history()``: the slices of a counter, statistic or gauge over any range, Redis and the
archive spliced into one answer.

Each series is read from both sides: Redis's hash of the precision (every slice it still
holds, bounded by the metric's samples, labelled series included, in one pipeline per round)
and the archive's rows of the range (one indexed query for every series of the metric). For
each series, the slices from the oldest Redis still holds onwards come from Redis (the open
slice included, and a slice archived before a late write is read as Redis has it now); the
older ones from the archive. No slice is missing where either side held it, none is counted
twice. Then the kind combines the series slice by slice (``HistorySpec``): counters add,
statistics merge, gauges group.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from asgiref.sync import sync_to_async
from django.utils.module_loading import import_string

from ..conf import conf
from ..core.drive import adrive, drive
from ..core.gather import gather_steps
from ..core.labels.aggregate import with_series
from ..core.steps import Steps
from ..core.timeutil import When, slice_start, to_timestamp
from ..core.validation import integer
from .missing import archive_tables

#: Most slices one ``history()`` call returns (about 11 years of hours, 270 of days): a
#: range wider than that is refused (read it in parts).
MAX_HISTORY = 100_000
#: Most series names one archive query lists (``series IN (...)``) for a queryset's history.
SERIES_PER_QUERY = 500

#: One series' slices: ``(series name, [(slice start, value), ...])``.
Found = tuple[str, list[tuple[int, Any]]]


@dataclass(frozen=True)
class HistorySpec:
    """How one kind's history reads and combines its slices."""

    kind: str
    #: The ``ArchivedSlice`` fields a row's value is made of, in ``from_row``'s order.
    fields: tuple[str, ...]
    #: A slice's value from its text in Redis.
    from_redis: Callable[[Any], Any]
    #: A slice's value from an archived row's ``fields``.
    from_row: Callable[..., Any]
    #: ``(starts of the range, one {start: value} per series) -> [(start, answer), ...]``.
    combine: Callable[[list[int], list[dict[int, Any]]], list[tuple[int, Any]]]


@dataclass(frozen=True)
class Range:
    """A checked ``history()`` range: the slice starts from ``low`` to ``high``."""

    precision: int
    low: int
    high: int

    def starts(self) -> list[int]:
        return list(range(self.low, self.high + 1, self.precision))


def checked(metric: Any, precision: object, start: When, end: When) -> Range:
    """The range of ``history(precision, start, end)``, or a ``ValueError``/``TypeError``
    saying what is wrong (before anything is read)."""
    precision = integer(precision, "precision", unit="seconds")
    if precision not in metric.precisions and precision not in conf.ARCHIVE_PRECISIONS:
        raise ValueError(
            f"{metric.LABEL.capitalize()} {metric.name!r} has no precision {precision}; "
            f"it keeps {', '.join(map(str, metric.precisions))} (and the archive "
            f"{', '.join(map(str, conf.ARCHIVE_PRECISIONS)) or 'none'})."
        )
    first, last = to_timestamp(start, "start"), to_timestamp(end, "end")
    if first > last:
        raise ValueError(f"history() needs start <= end, not start {first:g} > end {last:g}.")
    low, high = slice_start(first, precision), slice_start(last, precision)
    slices = (high - low) // precision + 1
    if slices > MAX_HISTORY:
        raise ValueError(
            f"history() returns at most {MAX_HISTORY:,} slices; {start!r} to {end!r} holds "
            f"{slices:,} slices of {precision} s: read it in parts or at a coarser precision."
        )
    return Range(precision, low, high)


def _own_steps(metric: Any, precision: int) -> Steps[list[Found]]:
    if precision not in metric.precisions:
        return [(metric.name, [])]  # Redis keeps no such slices: the archive's alone
    slices = yield from metric._slices_steps(precision, metric.READ_CHUNK)
    return [(metric.name, slices)]


def _joined(own: list[Found], theirs: Sequence[list[Found]]) -> list[Found]:
    return [*own, *(found for each in theirs for found in each)]


def metric_steps(metric: Any, precision: int) -> Steps[list[Found]]:
    """What Redis holds of ``metric`` (and of each of its series) at ``precision``."""
    return (yield from with_series(metric, lambda m: _own_steps(m, precision), _joined))


def rows_steps(rows: Sequence[Any], precision: int) -> Steps[list[Found]]:
    """What Redis holds of each of ``rows`` (series of a queryset): one pipeline per round."""
    results = yield from gather_steps([_own_steps(row, precision) for row in rows])
    found: list[Found] = []
    for result in results:
        if isinstance(result, Exception):
            raise result
        found += result
    return found


def archived(
    spec: HistorySpec, span: Range, using: str, *, metric: str | None, series: Sequence[str]
) -> dict[str, dict[int, Any]]:
    """The archive's rows of the range: every series of ``metric`` (a metric read whole), or
    just ``series``; ``{series: {start: value}}``."""
    from .models import ArchivedSlice  # the app's models: loaded once Django is ready

    base = ArchivedSlice.objects.using(using).filter(
        kind=spec.kind, precision=span.precision, start__gte=span.low, start__lte=span.high
    )
    if metric is not None:
        queries = [base.filter(metric=metric)]
    else:
        names = list(series)
        parts = range(0, len(names), SERIES_PER_QUERY)
        queries = [base.filter(series__in=names[i : i + SERIES_PER_QUERY]) for i in parts]
    found: dict[str, dict[int, Any]] = {}
    with archive_tables(using):
        for query in queries:
            for name, start, *values in query.values_list("series", "start", *spec.fields):
                found.setdefault(name, {})[start] = spec.from_row(*values)
    return found


def spliced(
    spec: HistorySpec,
    span: Range,
    redis: list[Found],
    archive: dict[str, dict[int, Any]],
) -> list[tuple[int, Any]]:
    """Each series' slices (Redis's from the oldest it holds on, the archive's before that),
    combined by the kind."""
    per_series: list[dict[int, Any]] = []
    seen: set[str] = set()
    for name, slices in redis:
        seen.add(name)
        boundary = min((start for start, _ in slices), default=None)
        kept = {
            start: value
            for start, value in archive.get(name, {}).items()
            if boundary is None or start < boundary
        }
        for start, raw in slices:
            if span.low <= start <= span.high:
                kept[start] = spec.from_redis(raw)
        per_series.append(kept)
    per_series += [slices for name, slices in archive.items() if name not in seen]
    return spec.combine(span.starts(), per_series)


def history(spec: HistorySpec, metric: Any, precision: object, start: When, end: When) -> Any:
    """``metric.history(precision, start, end)``."""
    span = checked(metric, precision, start, end)
    redis = drive(metric_steps(metric, span.precision))
    archive = archived(spec, span, conf.ARCHIVE_DATABASE, **_whose(metric))
    return spliced(spec, span, redis, archive)


async def ahistory(
    spec: HistorySpec, metric: Any, precision: object, start: When, end: When
) -> Any:
    """``history`` awaited: Redis on the async client, the database in a worker thread."""
    span = checked(metric, precision, start, end)
    redis = await adrive(metric_steps(metric, span.precision))
    read = sync_to_async(archived)
    archive = await read(spec, span, conf.ARCHIVE_DATABASE, **_whose(metric))
    return spliced(spec, span, redis, archive)


def _whose(metric: Any) -> dict[str, Any]:
    """A metric read whole takes every archived series of its name (series Redis forgot
    included); a series its own rows."""
    if metric.family is None:
        return {"metric": metric.name, "series": ()}
    return {"metric": None, "series": (metric.name,)}


def rows_history(
    spec: HistorySpec, rows: Sequence[Any], precision: object, start: When, end: When
) -> list[tuple[int, Any]]:
    """A queryset's ``history()``: its selected series combined (checked against each)."""
    spans = [checked(row, precision, start, end) for row in rows]
    if not spans:
        return spliced(spec, _empty_span(precision, start, end), [], {})
    span = spans[0]
    redis = drive(rows_steps(rows, span.precision))
    names = [row.name for row in rows]
    archive = archived(spec, span, conf.ARCHIVE_DATABASE, metric=None, series=names)
    return spliced(spec, span, redis, archive)


def _empty_span(precision: object, start: When, end: When) -> Range:
    """The range of a queryset selecting nothing (checked as far as it can be)."""
    precision = integer(precision, "precision", unit="seconds", minimum=1)
    first, last = to_timestamp(start, "start"), to_timestamp(end, "end")
    if first > last:
        raise ValueError(f"history() needs start <= end, not start {first:g} > end {last:g}.")
    low, high = slice_start(first, precision), slice_start(last, precision)
    if (high - low) // precision + 1 > MAX_HISTORY:
        raise ValueError(f"history() returns at most {MAX_HISTORY:,} slices.")
    return Range(precision, low, high)


class HistoryReads:
    """``history()`` and ``ahistory()`` of a kind kept in slices (``Counter``, ``Statistic``,
    ``Gauge``), and the hook its querysets' ``history()`` calls."""

    #: The dotted path of the kind's ``HistorySpec`` (imported on first use: it names the
    #: archive's Django models, loaded after the metrics).
    HISTORY_SPEC: ClassVar[str]

    def history(self, precision: int, start: When, end: When) -> list[tuple[int, Any]]:
        """The slices of ``precision`` from the one holding ``start`` to the one holding
        ``end``, oldest first: those Redis still holds from Redis (the open one included), the
        older ones from the archive (docs/history.md). A counter gives ``(start, count)`` for
        every slice (0 where nothing was counted), a statistic ``(start, summary)`` for every
        slice (count 0 where nothing was recorded), a gauge ``(start, {"last", "min", "max"})``
        for the slices that held a value. A labelled metric read whole adds (counters), merges
        (statistics) or groups (gauges) its series. At most ``MAX_HISTORY`` slices (100,000)."""
        return history(import_string(self.HISTORY_SPEC), self, precision, start, end)  # type: ignore[no-any-return]

    async def ahistory(self, precision: int, start: When, end: When) -> list[tuple[int, Any]]:
        """``history`` awaited."""
        spec = import_string(self.HISTORY_SPEC)
        return await ahistory(spec, self, precision, start, end)  # type: ignore[no-any-return]

    @classmethod
    def rows_history(
        cls, rows: Sequence[Any], precision: int, start: When, end: When
    ) -> list[tuple[int, Any]]:
        """A queryset's ``history()`` of the series ``rows`` (``core/queries/queryset.py``)."""
        return rows_history(import_string(cls.HISTORY_SPEC), rows, precision, start, end)
