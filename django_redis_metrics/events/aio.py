"""EventSeries' async twins (``arecord``, ``arecord_many``, ``abetween``, ``aearliest``,
``alatest``, ``acount``, ``asize``, ``acounts``, ``acount_by``): the sync methods' validation,
keys, scripts and steps, awaited on the running loop's client."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

from ..core.aio import AsyncMetric, adrive, arun_calls, ascript, get_async_connection
from ..core.connection import AsyncRedisClient
from ..core.timeutil import When
from ..core.validation import positive_int
from .codec import time_range
from .queries import parse_counts, script

if TYPE_CHECKING:
    from .model import EventSeries
    from .queries import Cursor

#: Keyword arguments of ``record`` that ``arecord`` does not take (they are no field names).
SYNC_ONLY = ("batch", "defer")


class SeriesAsync(AsyncMetric):
    """Mixed into :class:`~.model.EventSeries`."""

    async def arecord(self, when: When = None, **fields: Any) -> int:
        """``record`` awaited: one atomic round trip; returns the event's id. (For a write that
        never waits on Redis, ``record(defer=True)`` suits async views as well.)"""
        this = cast("EventSeries", self)
        for name in SYNC_ONLY:
            if name in fields:
                raise TypeError(
                    f"arecord() takes no {name!r}: use record({name}=...), which never waits "
                    "on Redis when deferred."
                )
        event = this._prepare(when, fields)
        client = get_async_connection()
        first: int = (await arun_calls(client, [this._record_call([event], client)]))[0]
        return first

    async def arecord_many(self, events: Iterable[Mapping[str, Any]]) -> list[int]:
        """``record_many`` awaited: everything validated first; the new ids in input order."""
        this = cast("EventSeries", self)
        chunks = this._record_chunks(events)
        client = get_async_connection()
        return await adrive(this._record_many_steps(chunks, client), client)

    async def _aafter_record(self, client: AsyncRedisClient, reply: Any) -> int:
        await self._alisted(client, reply[1])
        return int(reply[0])

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
        this = cast("EventSeries", self)
        left = this._limit(limit)
        client = get_async_connection()
        events: list[dict[str, Any]] = []
        cursor: Cursor | None = ("", "")
        while cursor is not None:
            steps = this._page_steps(ascending, lo, hi, cursor, left)
            page, cursor, left = await adrive(steps, client)
            events += page
        return events

    async def acount(self, start: When, end: When) -> int:
        """``count`` awaited."""
        return await adrive(cast("EventSeries", self)._count_steps(start, end))

    async def asize(self) -> int:
        """``size`` awaited."""
        return await adrive(cast("EventSeries", self)._size_steps())

    async def acounts(
        self, start: When, end: When, window: int | float, *, cache: bool = True
    ) -> list[int]:
        """``counts`` awaited."""
        calls = cast("EventSeries", self).plan_counts(start, end, window, cache=cache)
        client = get_async_connection()
        counts_script = script("events_counts")
        result: list[int] = []
        for keys, args in calls:
            result += parse_counts(await ascript(client, counts_script, keys, args))
        return result

    async def acount_by(self, field: str, start: When, end: When) -> dict[str, int]:
        """``count_by`` awaited."""
        return await adrive(cast("EventSeries", self)._count_by_steps(field, start, end))
