"""``UniqueBitmap.history()``: a bitmap's count of every period of a range, from Redis for the
periods it holds and from the archive for older ones (``archived.py``)."""

from __future__ import annotations

import time
from typing import ClassVar

from asgiref.sync import sync_to_async

from ..archive.horizon import history_periods, merged_counts
from ..core.aio import get_async_connection
from ..core.connection import AnyRedisClient, get_redis_connection
from ..core.drive import adrive, drive
from ..core.gather import gather_steps
from ..core.labels.uniting import checked
from ..core.periods import Period
from ..core.steps import Steps
from ..core.timeutil import When, to_timestamp
from .archived import archived_counts, split_archived
from .retention import retention


class BitmapHistory:
    """The history reads of :class:`~.model.UniqueBitmap`."""

    NOUN: ClassVar[str]
    name: str
    periods: tuple[str, ...]

    def _count_steps(self, client: AnyRedisClient, period: str | Period, when: When) -> Steps[int]:
        raise NotImplementedError

    @property
    def gen_key(self) -> str:
        raise NotImplementedError

    def history(self, period: str, start: When, end: When) -> list[tuple[int, int]]:
        """``(period start, distinct users)`` of each ``period`` ("day", "week", "month") from
        ``start``'s to ``end``'s, oldest first: Redis for the periods it holds (one pipelined
        round trip), the archive for older ones (one query); at most ``MAX_HISTORY_PERIODS``
        (``archive/horizon.py``) periods a call."""
        held, gone = self._history_plan(period, start, end)
        client = get_redis_connection()
        counts = drive(gather_steps([self._count_steps(client, p, None) for p in held]), client)
        return merged_counts(held, checked(counts), gone, archived_counts(self, gone))

    async def ahistory(self, period: str, start: When, end: When) -> list[tuple[int, int]]:
        """``history`` awaited."""
        held, gone = self._history_plan(period, start, end)
        client = get_async_connection()
        steps = gather_steps([self._count_steps(client, p, None) for p in held])
        counts = checked(await adrive(steps, client))
        return merged_counts(held, counts, gone, await sync_to_async(archived_counts)(self, gone))

    def _history_plan(
        self, period: str, start: When, end: When
    ) -> tuple[list[Period], list[Period]]:
        lo, hi = to_timestamp(start, "start"), to_timestamp(end, "end")
        periods = history_periods(self.NOUN, self.name, self.periods, period, lo, hi)
        return split_archived(periods, retention(), time.time())
