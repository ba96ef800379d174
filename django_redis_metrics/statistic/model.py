"""Statistic: count, sum, min, max, mean, standard deviation and quantiles of measured values
(response times, sizes), per epoch-aligned time slice at several precisions.

The aggregate statistics of *Redis in Action*, section 5.2.2, kept in slices like a counter's
(``counter/``) rather than in one sorted set per hour, with a log-scale histogram per slice for
p50/p95/p99 within a stated relative error (``histogram.py``). One atomic script call per
``record`` (``statistic_record.lua``) updates the slice holding the value at every precision and
enforces the retention, as counters do: no cleaner needed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from decimal import Decimal
from functools import partial
from typing import Any, ClassVar

from ..archive.history import HistoryReads
from ..core import catalogue, deferral
from ..core.aio import get_async_connection
from ..core.batch import Batch, ScriptCall, calls_steps, run_calls
from ..core.connection import AnyRedisClient, get_redis_connection
from ..core.drive import adrive, drive
from ..core.keys import to_str
from ..core.labels.admission import aadmitted, admitted
from ..core.labels.aggregate import with_series
from ..core.scripts import ScriptLibrary
from ..core.sliced import SlicedMetric
from ..core.steps import Op, Read, Steps, reads_of
from ..core.timeutil import When, slice_start, to_timestamp
from ..core.validation import iterable, measure, shown
from . import histogram
from .histogram import Summary
from .keys import KIND

script = ScriptLibrary(__name__.rpartition(".")[0])


class Statistic(HistoryReads, SlicedMetric):
    """Aggregates of measured values at several precisions.

    >>> latency = Statistic("latency:home")
    >>> latency.record(12.5)
    >>> with latency.time():        # records the block's milliseconds
    ...     render()
    >>> latency.summary(3600)       # {"count": ..., "mean": ..., "p95": ..., ...}
    """

    KIND: ClassVar[str] = KIND
    LABEL: ClassVar[str] = "statistic"
    PRECISIONS_SETTING: ClassVar[str] = "STATISTIC_PRECISIONS"
    SAMPLES_SETTING: ClassVar[str] = "STATISTIC_SAMPLES"
    HISTORY_SPEC: ClassVar[str] = "django_redis_metrics.statistic.archive.HISTORY"
    objects: ClassVar[catalogue.MetricManager[Statistic]] = catalogue.MetricManager()

    #: Most values one script call of ``record_many`` adds (each is parsed in the script,
    #: about 0.6 µs a value over four precisions).
    MAX_VALUES_PER_CALL: ClassVar[int] = 250
    #: Most distinct histogram buckets one script call of ``record_many`` touches: each is
    #: looked up in the slice's text at every precision, and a new one past ``MAX_BUCKETS``
    #: merges buckets, so a call's time grows with them. 8 keep a call near half a millisecond
    #: of Redis time whatever the values (docs/statistic.md, "Costs and limits").
    MAX_BUCKETS_PER_CALL: ClassVar[int] = 8
    #: Most histogram buckets a slice keeps (eight per doubling: 96 span a factor of 4096, say
    #: 1 ms to 4 s, at full accuracy). Past it the two lowest buckets are merged: quantiles
    #: falling in the merged ones lose their error bound, the higher ones keep it. A slice
    #: takes about 50 bytes plus 9 to 13 per bucket holding values, so at most about 1.3 KB.
    MAX_BUCKETS: ClassVar[int] = 96
    #: Most slices ``recent`` reads.
    MAX_RECENT: ClassVar[int] = 10_000
    #: Slices asked for per HSCAN step or HMGET.
    READ_CHUNK: ClassVar[int] = 500

    # Writing

    @admitted
    def record(
        self,
        value: float | Decimal,
        when: When = None,
        *,
        batch: Batch | None = None,
        defer: bool = False,
    ) -> None:
        """Add ``value`` (a finite int, float or ``Decimal`` within ±2**53) to the slice
        holding ``when`` at every precision: one atomic round trip.

        With ``batch``, the write is queued and sent with the batch's other writes. With
        ``defer=True`` it is checked now and handed to the process's sender: it never waits
        on Redis nor raises because Redis is away.
        """
        number = measure(value)
        timestamp = to_timestamp(when)
        if deferral.check_defer(defer, batch):
            deferral.sink().write(
                f"statistic {self.name!r}",
                lambda later: self.record(number, timestamp, batch=later),
            )
            return
        self._send(partial(self._record_call, [number], timestamp), batch)

    @admitted
    def record_many(
        self, values: Iterable[float | Decimal], when: When = None, *, batch: Batch | None = None
    ) -> int:
        """Add several values measured at the same ``when``: every value is checked first,
        then they go, sorted, in script calls of at most ``MAX_VALUES_PER_CALL`` values
        falling in at most ``MAX_BUCKETS_PER_CALL`` histogram buckets, each atomic and so
        each short (the request sender merges the response times of one view and second this
        way). Returns the number of calls."""
        deferral.check_batch(batch)
        numbers = [measure(value) for value in iterable(values, "values", "numbers")]
        timestamp = to_timestamp(when)
        chunks = histogram.calls(numbers, self.MAX_VALUES_PER_CALL, self.MAX_BUCKETS_PER_CALL)
        client = get_redis_connection()
        calls = [self._record_call(chunk, timestamp, client) for chunk in chunks]
        if batch is not None:
            for call in calls:
                batch.add(call)
        elif calls:
            run_calls(client, calls)
        return len(calls)

    def _record_call(
        self, numbers: Sequence[float], timestamp: float, client: AnyRedisClient
    ) -> ScriptCall:
        """The script call adding ``numbers`` (already checked) at ``timestamp``."""
        args: list[str | int] = [self.MAX_BUCKETS, len(numbers)]
        for number in numbers:
            args += [repr(number), histogram.bucket(number)]
        args.append(repr(timestamp))
        return self._call(script("statistic_record"), args, timestamp, client)

    @contextmanager
    def time(self, *, batch: Batch | None = None, defer: bool = False) -> Iterator[None]:
        """Record the milliseconds the block takes (monotonic clock), even if it raises."""
        deferral.check_defer(defer, batch)
        if self.family is None:
            self.refuse_unlabelled_write()
        started = time.monotonic()
        try:
            yield
        finally:
            elapsed = (time.monotonic() - started) * 1000
            self.record(elapsed, batch=batch, defer=defer)

    # Async twins

    @aadmitted
    async def arecord(self, value: float | Decimal, when: When = None) -> None:
        """``record`` awaited: one atomic round trip. (``record(defer=True)`` never waits on
        Redis either, and suits async views as well.)"""
        client = get_async_connection()
        await adrive(self._record_steps(client, value, when), client)

    def _record_steps(
        self, client: AnyRedisClient, value: float | Decimal, when: When
    ) -> Steps[None]:
        number, timestamp = measure(value), to_timestamp(when)
        yield from calls_steps([self._record_call([number], timestamp, client)])

    @asynccontextmanager
    async def atime(self) -> AsyncIterator[None]:
        """``time`` for ``async with``: records the milliseconds the block takes (monotonic
        clock), even if it raises or is cancelled, by ``arecord`` awaited on leaving it.
        (``with stat.time(defer=True):`` never waits on Redis, and suits async code too.)"""
        if self.family is None:
            self.refuse_unlabelled_write()
        started = time.monotonic()
        try:
            yield
        finally:
            await self.arecord((time.monotonic() - started) * 1000)

    async def asummary(self, precision: int, when: When = None) -> Summary:
        """``summary`` awaited."""
        return await adrive(self._summary_steps(precision, when))

    async def apercentile(self, precision: int, q: float, when: When = None) -> float | None:
        """``percentile`` awaited."""
        return await adrive(self._percentile_steps(precision, q, when))

    async def aseries(self, precision: int) -> list[tuple[int, Summary]]:
        """``series`` awaited."""
        return await adrive(self._series_steps(precision))

    async def arecent(
        self, precision: int, count: int | None = None, until: When = None
    ) -> list[tuple[int, Summary]]:
        """``recent`` awaited."""
        return await adrive(self._recent_steps(precision, count, until))

    async def atotals(self) -> dict[str, Any]:
        """``totals`` awaited."""
        return await adrive(self._totals_steps())

    # Reading

    def summary_reads(
        self, precision: int, when: When = None
    ) -> tuple[list[Read], Callable[[Sequence[Any]], Summary]]:
        """The reads behind :meth:`summary`, for a caller's own pipeline (the dashboard):
        ``commands`` as ``(redis-py pipeline method name, args)``, and ``parse(replies)``
        giving ``summary()``'s dict from their replies, in order.
        The statistic's own slice, in one round trip: a labelled statistic's series are each
        read by their own ``summary_reads()``."""
        return reads_of(partial(self._own_summary_steps, precision, to_timestamp(when)))

    def _own_summary_steps(self, precision: int, when: When) -> Steps[Summary]:
        texts = yield from self._own_slice_steps(precision, to_timestamp(when))
        return histogram.parse_merged(texts)

    def _own_slice_steps(self, precision: int, timestamp: float) -> Steps[list[Any]]:
        """The text of the slice of ``precision`` holding ``timestamp``, as a list of one."""
        start = slice_start(timestamp, self._check_precision(precision))
        return [(yield Op("hget", self.key(precision), str(start)))]

    def _slice_texts_steps(self, precision: int, when: When) -> Steps[list[Any]]:
        """The texts of that slice in the statistic and in each of its series."""
        self._check_precision(precision)
        timestamp = to_timestamp(when)
        return (
            yield from with_series(
                self, lambda m: m._own_slice_steps(precision, timestamp), _joined
            )
        )

    def _summary_steps(self, precision: int, when: When) -> Steps[Summary]:
        return histogram.parse_merged((yield from self._slice_texts_steps(precision, when)))

    def totals_reads(self) -> tuple[list[Read], Callable[[Sequence[Any]], dict[str, Any]]]:
        """The reads behind :meth:`totals`, as :meth:`summary_reads` gives them (the
        statistic's own totals)."""
        return reads_of(self._own_totals_steps)

    def _totals_steps(self) -> Steps[dict[str, Any]]:
        return (yield from with_series(self, Statistic._own_totals_steps, _added_totals))

    def _own_totals_steps(self) -> Steps[dict[str, Any]]:
        count, total = yield Op("hmget", self.meta_key, ["n", "s"])
        return {
            "count": int(to_str(count)) if count is not None else 0,
            "sum": float(to_str(total)) if total is not None else 0.0,
        }

    def totals(self) -> dict[str, Any]:
        """``{"count", "sum"}`` of every value recorded since the statistic was first written
        (kept apart from the slices, never trimmed; gone only with the whole statistic, by
        :meth:`delete` or once nobody wrote it for its whole retention): what a Prometheus
        summary's ``_count`` and ``_sum`` are."""
        return drive(self._totals_steps())

    def summary(self, precision: int, when: When = None) -> Summary:
        """The slice of ``precision`` holding ``when`` (default: now): ``count``, ``sum``,
        ``min``, ``max``, ``mean``, ``stddev`` (the sample standard deviation, ``None`` below
        two values) and the quantiles ``p50``, ``p95``, ``p99`` (within
        ``histogram.RELATIVE_ERROR``, 4.33 %). An empty slice: count 0, the others ``None``."""
        return drive(self._summary_steps(precision, when))

    def percentile(self, precision: int, q: float, when: When = None) -> float | None:
        """The ``q``-quantile (0 < q ≤ 1; nearest rank) of the slice holding ``when``, within
        ``histogram.RELATIVE_ERROR`` of the exact one; ``None`` for an empty slice."""
        return drive(self._percentile_steps(precision, q, when))

    def _percentile_steps(self, precision: int, q: float, when: When) -> Steps[float | None]:
        if isinstance(q, bool) or not isinstance(q, int | float):
            raise TypeError(f"q must be a number in (0, 1], not {shown(q)}.")
        if not 0 < q <= 1:
            raise ValueError(f"q must be a number in (0, 1], not {shown(q)}.")
        texts = yield from self._slice_texts_steps(precision, when)
        merged = histogram.merge(histogram.Slice.from_text(t) for t in texts if t is not None)
        return None if merged is None else merged.quantile(q)

    def series(self, precision: int) -> list[tuple[int, Summary]]:
        """The stored slices of ``precision`` as ``(slice start, summary)``, oldest first."""
        return drive(self._series_steps(precision))

    def _series_steps(self, precision: int) -> Steps[list[tuple[int, Summary]]]:
        precision = self._check_precision(precision)
        slices = yield from with_series(
            self, lambda m: _listed(m._slices_steps(precision, m.READ_CHUNK)), _united
        )
        return [(start, histogram.parse_merged(texts)) for start, texts in sorted(slices)]

    def recent(
        self, precision: int, count: int | None = None, until: When = None
    ) -> list[tuple[int, Summary]]:
        """The newest ``count`` slices (default: ``samples``) up to ``until``, oldest first;
        a slice holding nothing has count 0."""
        return drive(self._recent_steps(precision, count, until))

    def _recent_steps(
        self, precision: int, count: int | None, until: When
    ) -> Steps[list[tuple[int, Summary]]]:
        found = yield from with_series(
            self,
            lambda m: _listed(
                m._recent_steps_of(precision, count, until, m.MAX_RECENT, m.READ_CHUNK)
            ),
            _within,
        )
        return [(s, histogram.parse_merged(texts)) for s, texts in found]


Texts = list[tuple[int, list[Any]]]


def _listed(steps: Steps[Sequence[tuple[int, Any]]]) -> Steps[Texts]:
    """``(start, text)`` pairs as ``(start, [text])``: ready to take the texts of series."""
    return [(start, [text]) for start, text in (yield from steps)]


def _joined(own: list[Any], theirs: Sequence[list[Any]]) -> list[Any]:
    return [*own, *(item for found in theirs for item in found)]


def _united(own: Texts, theirs: Sequence[Texts]) -> Texts:
    """Every slice any series holds, with the texts of all of them."""
    grouped = dict(own)
    for found in theirs:
        for start, texts in found:
            grouped.setdefault(start, []).extend(texts)
    return list(grouped.items())


def _within(own: Texts, theirs: Sequence[Texts]) -> Texts:
    """The slices of ``own`` (a window), with the texts the series hold in them."""
    grouped = dict(own)
    for found in theirs:
        for start, texts in found:
            if start in grouped:
                grouped[start].extend(texts)
    return own


def _added_totals(own: dict[str, Any], theirs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    return {
        "count": own["count"] + sum(t["count"] for t in theirs),
        "sum": own["sum"] + sum(t["sum"] for t in theirs),
    }
