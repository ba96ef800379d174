"""UniqueEstimate's async twins (``aadd``, ``acount``); a range's ``acount`` is on the query
itself (``query.py``). The sync methods' validation, keys and scripts, awaited on the running
loop's client."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..core.aio import AsyncMetric, arun_calls, get_async_connection
from ..core.catalogue import inline_catalogue
from ..core.periods import Period
from ..core.timeutil import When, to_timestamp
from .items import normalize_item

if TYPE_CHECKING:
    from .model import UniqueEstimate


class EstimateAsync(AsyncMetric):
    """Mixed into :class:`~.model.UniqueEstimate`."""

    async def aadd(self, item: object, when: When = None) -> None:
        """``add`` awaited: one atomic round trip. (``add(defer=True)`` never waits on Redis
        either, and suits async views as well.)"""
        this = cast("UniqueEstimate", self)
        text, timestamp = normalize_item(item), to_timestamp(when)
        client = get_async_connection()
        await arun_calls(client, [this._add_call(text, timestamp, inline_catalogue(client))])

    async def acount(self, period: str | Period, when: When = None) -> int:
        """``count`` awaited: one ``PFCOUNT``."""
        this = cast("UniqueEstimate", self)
        key = this.key(this._period(period, when))
        return int(await get_async_connection().pfcount(key))
