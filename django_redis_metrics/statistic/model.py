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

from ..core import catalogue, deferral
from ..core.aio import get_async_connection
from ..core.batch import Batch, ScriptCall, calls_steps, run_calls
from ..core.connection import AnyRedisClient, get_redis_connection
from ..core.drive import adrive, drive
from ..core.keys import to_str
from ..core.scripts import ScriptLibrary
from ..core.sliced import SlicedMetric
from ..core.steps import Op, Read, Steps, reads_of
from ..core.timeutil import When, slice_start, to_timestamp
from ..core.validation import measure
from . import histogram
from .histogram import Summary
from .keys import KIND

script = ScriptLibrary(__name__.rpartition(".")[0])


class Statistic(SlicedMetric):
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
    objects: ClassVar[catalogue.MetricManager[Statistic]] = catalogue.MetricManager()

    #: Most values one script call of ``record_many`` adds (each is parsed in the script).
    MAX_VALUES_PER_CALL: ClassVar[int] = 1000
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

    def record_many(
        self, values: Iterable[float | Decimal], when: When = None, *, batch: Batch | None = None
    ) -> int:
        """Add several values measured at the same ``when``: every value is checked first,
        then they go in script calls of at most ``MAX_VALUES_PER_CALL`` values, each atomic
        (the request sender merges the response times of one view and second this way).
        Returns the number of calls."""
        numbers = [measure(value) for value in values]
        timestamp = to_timestamp(when)
        chunks = [
            numbers[i : i + self.MAX_VALUES_PER_CALL]
            for i in range(0, len(numbers), self.MAX_VALUES_PER_CALL)
        ]
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
        started = time.monotonic()
        try:
            yield
        finally:
            elapsed = (time.monotonic() - started) * 1000
            self.record(elapsed, batch=batch, defer=defer)

    # Async twins

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
        giving ``summary()``'s dict from their replies, in order."""
        return reads_of(partial(self._summary_steps, precision, to_timestamp(when)))

    def _summary_steps(self, precision: int, when: When) -> Steps[Summary]:
        precision = self._check_precision(precision)
        start = slice_start(to_timestamp(when), precision)
        return histogram.parse((yield Op("hget", self.key(precision), str(start))))

    def totals_reads(self) -> tuple[list[Read], Callable[[Sequence[Any]], dict[str, Any]]]:
        """The reads behind :meth:`totals`, as :meth:`summary_reads` gives them."""
        return reads_of(self._totals_steps)

    def _totals_steps(self) -> Steps[dict[str, Any]]:
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
            raise TypeError(f"q must be a number in (0, 1], not {q!r}.")
        if not 0 < q <= 1:
            raise ValueError(f"q must be a number in (0, 1], not {q!r}.")
        precision = self._check_precision(precision)
        start = slice_start(to_timestamp(when), precision)
        text = yield Op("hget", self.key(precision), str(start))
        return histogram.quantile_of(text, q)

    def series(self, precision: int) -> list[tuple[int, Summary]]:
        """The stored slices of ``precision`` as ``(slice start, summary)``, oldest first."""
        return drive(self._series_steps(precision))

    def _series_steps(self, precision: int) -> Steps[list[tuple[int, Summary]]]:
        precision = self._check_precision(precision)
        slices = yield from self._slices_steps(precision, self.READ_CHUNK)
        return [(start, histogram.parse(text)) for start, text in slices]

    def recent(
        self, precision: int, count: int | None = None, until: When = None
    ) -> list[tuple[int, Summary]]:
        """The newest ``count`` slices (default: ``samples``) up to ``until``, oldest first;
        a slice holding nothing has count 0."""
        return drive(self._recent_steps(precision, count, until))

    def _recent_steps(
        self, precision: int, count: int | None, until: When
    ) -> Steps[list[tuple[int, Summary]]]:
        found = yield from self._recent_steps_of(
            precision, count, until, self.MAX_RECENT, self.READ_CHUNK
        )
        return [(s, histogram.parse(t)) for s, t in found]
