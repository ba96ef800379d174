"""UniqueBitmap's async twins (``amark``, ``acount``, ``acontains``); a query's ``acount`` and
``acontains`` are on the query itself (``query.py``). The sync methods' validation, keys,
scripts and steps, awaited on the running loop's client."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from ..core.aio import AsyncMetric, adrive, arun_calls, get_async_connection
from ..core.connection import AsyncRedisClient
from ..core.periods import Period
from ..core.timeutil import When, to_timestamp
from . import mark_steps, marking
from .ids import normalize_id
from .retention import retention

if TYPE_CHECKING:
    from .model import UniqueBitmap


class BitmapAsync(AsyncMetric):
    """Mixed into :class:`~.model.UniqueBitmap`."""

    async def amark(self, user_id: object, when: When = None) -> None:
        """``mark`` awaited: one atomic round trip (a first-seen str/UUID id on Redis Cluster
        costs one more). (``mark(defer=True)`` never waits on Redis and suits async views.)"""
        this = cast("UniqueBitmap", self)
        context = marking.mark_settings(retention)
        value = normalize_id(user_id, context.highest)
        timestamp = to_timestamp(when)
        client = get_async_connection()
        steps = mark_steps.mark_steps(client, this, value, timestamp, context)
        await arun_calls(client, [await adrive(steps, client)])

    async def _aafter_mark(
        self,
        mapped: object,
        kind: str,
        fact: tuple[str, str, str],
        client: AsyncRedisClient,
        reply: Any,
    ) -> None:
        """``_after_mark`` on the async path: the listing awaited."""
        listed = mark_steps.confirm_reply(client, mapped, kind, reply)
        if listed is not None:
            await self._alisted(client, listed)
            marking.confirmed.add(fact)

    async def acount(self, period: str | Period, when: When = None) -> int:
        """``count`` awaited."""
        return await adrive(cast("UniqueBitmap", self)._count_steps(period, when))

    async def acontains(self, user_id: object, period: str | Period, when: When = None) -> bool:
        """``contains`` awaited."""
        client = get_async_connection()
        steps = cast("UniqueBitmap", self)._contains_steps(client, user_id, period, when)
        return await adrive(steps, client)
