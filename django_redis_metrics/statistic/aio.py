"""Statistic's async twins (``arecord``, ``atime``, ``asummary``, ``apercentile``, ``aseries``,
``arecent``, ``atotals``): the sync methods' validation, keys, scripts and steps, awaited on the
running loop's client."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from decimal import Decimal
from typing import TYPE_CHECKING, Any, cast

from ..core.aio import AsyncMetric, adrive, arun_calls, get_async_connection
from ..core.steps import reads_steps
from ..core.timeutil import When, to_timestamp
from ..core.validation import measure
from .histogram import Summary

if TYPE_CHECKING:
    from .model import Statistic


class StatisticAsync(AsyncMetric):
    """Mixed into :class:`~.model.Statistic`."""

    async def arecord(self, value: float | Decimal, when: When = None) -> None:
        """``record`` awaited: one atomic round trip. (``record(defer=True)`` never waits on
        Redis either, and suits async views as well.)"""
        this = cast("Statistic", self)
        number, timestamp = measure(value), to_timestamp(when)
        client = get_async_connection()
        await arun_calls(client, [this._record_call([number], timestamp, client)])

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
        return await adrive(reads_steps(*cast("Statistic", self).summary_reads(precision, when)))

    async def apercentile(self, precision: int, q: float, when: When = None) -> float | None:
        """``percentile`` awaited."""
        return await adrive(cast("Statistic", self)._percentile_steps(precision, q, when))

    async def aseries(self, precision: int) -> list[tuple[int, Summary]]:
        """``series`` awaited."""
        return await adrive(cast("Statistic", self)._series_steps(precision))

    async def arecent(
        self, precision: int, count: int | None = None, until: When = None
    ) -> list[tuple[int, Summary]]:
        """``recent`` awaited."""
        return await adrive(cast("Statistic", self)._recent_steps(precision, count, until))

    async def atotals(self) -> dict[str, Any]:
        """``totals`` awaited."""
        return await adrive(reads_steps(*cast("Statistic", self).totals_reads()))
