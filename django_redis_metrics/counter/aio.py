"""Counter's async twins (``aincr``, ``aincr_many``, ``aseries``, ``arecent``, ``atotal``):
the sync methods' validation, keys, scripts and steps, awaited on the running loop's client."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

from ..core.aio import AsyncMetric, adrive, arun_calls, get_async_connection
from ..core.timeutil import When

if TYPE_CHECKING:
    from .model import Counter


class CounterAsync(AsyncMetric):
    """Mixed into :class:`~.model.Counter`."""

    async def aincr(self, count: int = 1, when: When = None) -> None:
        """``incr`` awaited: one atomic round trip. (``incr(defer=True)`` never waits on Redis
        either, and suits async views as well.)"""
        this = cast("Counter", self)
        count, timestamp = this._checked(count, when)
        slices = this._slices_of(count, timestamp)
        client = get_async_connection()
        await arun_calls(client, [this._incr_call(slices, client, count)])

    async def aincr_many(self, increments: Iterable[tuple[When, int]]) -> int:
        """``incr_many`` awaited: everything validated first; returns the number of calls."""
        this = cast("Counter", self)
        totals = this._totals(increments)
        client = get_async_connection()
        calls = this._incr_calls(totals, client)
        if calls:
            await arun_calls(client, calls)
        return len(calls)

    async def aseries(self, precision: int) -> list[tuple[int, int]]:
        """``series`` awaited."""
        this = cast("Counter", self)
        return await adrive(this._series_steps(precision))

    async def arecent(
        self, precision: int, count: int | None = None, until: When = None
    ) -> list[tuple[int, int]]:
        """``recent`` awaited."""
        this = cast("Counter", self)
        return await adrive(this._recent_steps(precision, count, until))

    async def atotal(self, precision: int | None = None) -> int:
        """``total`` awaited."""
        this = cast("Counter", self)
        return sum(count for _, count in await self.aseries(this._total_precision(precision)))
