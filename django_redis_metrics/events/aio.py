"""EventSeries' async twins of its reads (``abetween``, ``aearliest``, ``alatest``, ``acount``,
``asize``, ``acounts``, ``acount_by``): the sync methods' steps, awaited on the running loop's
client. (``arecord`` and ``arecord_many`` are beside their sync twins, in ``model.py``.)"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ..core.aio import get_async_connection
from ..core.drive import adrive
from ..core.timeutil import When
from ..core.validation import positive_int
from .codec import time_range
from .queries import SeriesQueries

if TYPE_CHECKING:
    from .queries import Cursor


class SeriesAsync(SeriesQueries):
    """Mixed into :class:`~.model.EventSeries`."""

    async def abetween(
        self, start: When, end: When, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """``between`` awaited."""
        lo, hi = time_range(start, end)
        return await self._aread(True, lo, hi, limit)

    async def aearliest(self, n: int) -> list[dict[str, Any]]:
        """``earliest`` awaited."""
        return await self._aread(True, -math.inf, math.inf, positive_int(n, "n"))

    async def alatest(self, n: int) -> list[dict[str, Any]]:
        """``latest`` awaited."""
        return await self._aread(False, -math.inf, math.inf, positive_int(n, "n"))

    async def _aread(
        self, ascending: bool, lo: float, hi: float, limit: int | None
    ) -> list[dict[str, Any]]:
        left = self._limit(limit)
        client = get_async_connection()
        events: list[dict[str, Any]] = []
        cursor: Cursor | None = ("", "")
        while cursor is not None:
            steps = self._page_steps(ascending, lo, hi, cursor, left)
            page, cursor, left = await adrive(steps, client)
            events += page
        return events

    async def acount(self, start: When, end: When) -> int:
        """``count`` awaited."""
        return await adrive(self._count_steps(start, end))

    async def asize(self) -> int:
        """``size`` awaited."""
        return await adrive(self._size_steps())

    async def acounts(
        self, start: When, end: When, window: int | float, *, cache: bool = True
    ) -> list[int]:
        """``counts`` awaited."""
        return await adrive(self._counts_steps(start, end, window, cache))

    async def acount_by(self, field: str, start: When, end: When) -> dict[str, int]:
        """``count_by`` awaited."""
        return await adrive(self._count_by_steps(field, start, end))
