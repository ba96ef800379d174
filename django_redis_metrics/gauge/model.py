"""Gauge: a value that goes up and down (a queue's length, free disk), its latest value and its
last, min and max per epoch-aligned time slice at several precisions.

One atomic script call per ``set`` (``gauge_set.lua``) updates the slice holding the value at
every precision and the gauge's latest value, and enforces the retention as counters do.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import partial
from typing import Any, ClassVar

from ..archive.history import HistoryReads
from ..core import catalogue, deferral
from ..core.aio import get_async_connection
from ..core.batch import Batch, ScriptCall, calls_steps
from ..core.connection import AnyRedisClient
from ..core.drive import adrive, drive
from ..core.gather import gather_steps
from ..core.labels.admission import aadmitted, admitted
from ..core.labels.aggregate import series_of_steps
from ..core.labels.labelling import OTHER
from ..core.scripts import ScriptLibrary
from ..core.sliced import SlicedMetric
from ..core.steps import Op, Read, Steps, reads_of
from ..core.timeutil import When, to_timestamp
from ..core.validation import measure
from .keys import KIND

script = ScriptLibrary(__name__.rpartition(".")[0])

#: The meta hash's field holding the latest value, as ``time,value``.
LATEST = "v"


class Gauge(HistoryReads, SlicedMetric):
    """A value set from time to time, kept at several precisions.

    >>> queue = Gauge("queue:emails")
    >>> queue.set(42)
    >>> queue.get()               # 42.0: the value of the latest time
    >>> queue.series(60)          # [(slice start, {"last": ..., "min": ..., "max": ...}), ...]
    """

    KIND: ClassVar[str] = KIND
    LABEL: ClassVar[str] = "gauge"
    PRECISIONS_SETTING: ClassVar[str] = "COUNTER_PRECISIONS"
    SAMPLES_SETTING: ClassVar[str] = "COUNTER_SAMPLES"
    HISTORY_SPEC: ClassVar[str] = "django_redis_metrics.gauge.archive.HISTORY"
    objects: ClassVar[catalogue.MetricManager[Gauge]] = catalogue.MetricManager()

    #: Slices asked for per HSCAN step.
    READ_CHUNK: ClassVar[int] = 1000

    @admitted
    def set(
        self,
        value: float | Decimal,
        when: When = None,
        *,
        batch: Batch | None = None,
        defer: bool = False,
    ) -> None:
        """Set the gauge to ``value`` (a finite int, float or ``Decimal`` within ±2**53) at
        ``when`` (default: now): one atomic round trip. The value becomes the latest unless a
        value of a later ``when`` is stored (a backfill never hides a newer value).

        ``batch`` and ``defer=True`` work as for ``Counter.incr``.
        """
        number = measure(value)
        timestamp = to_timestamp(when)
        if deferral.check_defer(defer, batch):
            deferral.sink().write(
                f"gauge {self.name!r}", lambda later: self.set(number, timestamp, batch=later)
            )
            return
        self._send(partial(self._set_call, number, timestamp), batch)

    def _set_call(self, number: float, timestamp: float, client: AnyRedisClient) -> ScriptCall:
        """The script call of ``set`` (``number`` and ``timestamp`` already checked)."""
        args = [repr(number), repr(timestamp)]
        return self._call(script("gauge_set"), args, timestamp, client)

    def get(self) -> float | None:
        """The value of the latest ``when`` set (of equal times, the one set last), or
        ``None`` if the gauge holds nothing."""
        latest = self.latest()
        return None if latest is None else latest[1]

    def latest_reads(
        self,
    ) -> tuple[list[Read], Callable[[Sequence[Any]], tuple[float, float] | None]]:
        """The reads behind :meth:`latest`, for a caller's own pipeline (an exporter):
        ``commands`` as ``(redis-py pipeline method name, args)``, and ``parse(replies)``
        giving ``latest()``'s answer from their replies, in order."""
        return reads_of(self._latest_steps)

    def _latest_steps(self) -> Steps[tuple[float, float] | None]:
        reply = yield Op("hget", self.meta_key, LATEST)
        if reply is None:
            return None
        when, value = _text(reply).split(",")
        return float(when), float(value)

    def latest(self) -> tuple[float, float] | None:
        """``(when, value)`` of the latest value, or ``None``."""
        return drive(self._latest_steps())

    @aadmitted
    async def aset(self, value: float | Decimal, when: When = None) -> None:
        """``set`` awaited: one atomic round trip. (``set(defer=True)`` never waits on Redis
        either, and suits async views as well.)"""
        client = get_async_connection()
        await adrive(self._set_steps(client, value, when), client)

    def _set_steps(self, client: AnyRedisClient, value: float | Decimal, when: When) -> Steps[None]:
        number, timestamp = measure(value), to_timestamp(when)
        yield from calls_steps([self._set_call(number, timestamp, client)])

    async def aget(self) -> float | None:
        """``get`` awaited."""
        latest = await self.alatest()
        return None if latest is None else latest[1]

    async def alatest(self) -> tuple[float, float] | None:
        """``latest`` awaited."""
        return await adrive(self._latest_steps())

    async def aseries(self, precision: int) -> list[tuple[int, dict[str, float]]]:
        """``series`` awaited."""
        return await adrive(self._series_steps(precision))

    def series(self, precision: int) -> list[tuple[int, dict[str, float]]]:
        """The stored slices of ``precision`` as ``(slice start, {"last", "min", "max"})``,
        oldest first; ``last`` is the value of the latest time within the slice."""
        return drive(self._series_steps(precision))

    def group_by(self, label: str | None = None) -> dict[Any, float]:
        """The latest value of each series of a labelled gauge: keyed by the tuple of its
        label values, or, given ``label``, added up per value of that label (e.g. queue sizes
        per queue across hosts). The ``__other__`` series is keyed ``"__other__"``. Two round
        trips: the list of series, then every series' latest value in one pipeline."""
        return drive(self._group_by_steps(label))

    async def agroup_by(self, label: str | None = None) -> dict[Any, float]:
        """``group_by`` awaited."""
        return await adrive(self._group_by_steps(label))

    def _group_by_steps(self, label: str | None) -> Steps[dict[Any, float]]:
        if label is not None and label not in self.label_names:
            raise ValueError(f"Gauge {self.name!r} has no label {label!r}: {self.label_names!r}.")
        series = yield from series_of_steps(self)
        found = yield from gather_steps([each._latest_steps() for each in series])
        grouped: dict[Any, float] = {}
        for each, latest in zip(series, found, strict=True):
            if isinstance(latest, Exception):
                raise latest
            if latest is None:
                continue
            labels = dict(each.label_pairs)
            if not labels:
                key: Any = OTHER
            elif label is None:
                key = tuple(labels.values())
            else:
                key = labels[label]
            grouped[key] = grouped.get(key, 0.0) + latest[1]
        return grouped

    def _series_steps(self, precision: int) -> Steps[list[tuple[int, dict[str, float]]]]:
        precision = self._check_precision(precision)
        found = []
        for start, text in (yield from self._slices_steps(precision, self.READ_CHUNK)):
            _, last, low, high = (float(part) for part in text.split(","))
            found.append((start, {"last": last, "min": low, "max": high}))
        return found


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
