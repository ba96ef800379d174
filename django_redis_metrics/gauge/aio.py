"""Gauge's async twins (``aset``, ``aget``, ``alatest``, ``aseries``): the sync methods'
validation, keys, scripts and steps, awaited on the running loop's client."""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, cast

from ..core.aio import AsyncMetric, adrive, arun_calls, get_async_connection
from ..core.steps import reads_steps
from ..core.timeutil import When, to_timestamp
from ..core.validation import measure

if TYPE_CHECKING:
    from .model import Gauge


class GaugeAsync(AsyncMetric):
    """Mixed into :class:`~.model.Gauge`."""

    async def aset(self, value: float | Decimal, when: When = None) -> None:
        """``set`` awaited: one atomic round trip. (``set(defer=True)`` never waits on Redis
        either, and suits async views as well.)"""
        this = cast("Gauge", self)
        number, timestamp = measure(value), to_timestamp(when)
        client = get_async_connection()
        await arun_calls(client, [this._set_call(number, timestamp, client)])

    async def aget(self) -> float | None:
        """``get`` awaited."""
        latest = await self.alatest()
        return None if latest is None else latest[1]

    async def alatest(self) -> tuple[float, float] | None:
        """``latest`` awaited."""
        return await adrive(reads_steps(*cast("Gauge", self).latest_reads()))

    async def aseries(self, precision: int) -> list[tuple[int, dict[str, float]]]:
        """``series`` awaited."""
        return await adrive(cast("Gauge", self)._series_steps(precision))
