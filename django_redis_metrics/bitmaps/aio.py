"""UniqueBitmap's async twins (``amark``, ``acount``, ``acontains``); a query's ``acount`` and
``acontains`` are on the query itself (``query.py``). The sync methods' validation, keys,
scripts and steps, awaited on the running loop's client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ..core.aio import AsyncMetric, adrive, arun_calls, get_async_connection
from ..core.connection import AsyncRedisClient
from ..core.periods import Period
from ..core.timeutil import When, to_timestamp
from .ids import normalize_id, note_marked

if TYPE_CHECKING:
    from .model import UniqueBitmap


class BitmapAsync(AsyncMetric):
    """Mixed into :class:`~.model.UniqueBitmap`."""

    async def amark(self, user_id: object, when: When = None) -> None:
        """``mark`` awaited: one atomic round trip (a first-seen str/UUID id on Redis Cluster
        costs one more). (``mark(defer=True)`` never waits on Redis and suits async views.)"""
        this = cast("UniqueBitmap", self)
        value = normalize_id(user_id)
        timestamp = to_timestamp(when)
        client = get_async_connection()
        call = await adrive(this._mark_steps(client, value, timestamp), client)
        await arun_calls(client, [call])

    def _aafter_mark(self, mapped: str | None, kind: str) -> Any:
        async def after(client: AsyncRedisClient, reply: Any) -> None:
            note_marked(client, reply, mapped, kind)
            await self._alisted(client, reply[0])

        return after

    async def acount(self, period: str | Period, when: When = None) -> int:
        """``count`` awaited."""
        return await adrive(cast("UniqueBitmap", self)._count_steps(period, when))

    async def acontains(self, user_id: object, period: str | Period, when: When = None) -> bool:
        """``contains`` awaited."""
        client = get_async_connection()
        steps = cast("UniqueBitmap", self)._contains_steps(client, user_id, period, when)
        return await adrive(steps, client)
