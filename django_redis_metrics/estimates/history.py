"""``UniqueEstimate.history()``: an estimate's count of every period of a range, from Redis
for the periods it holds and from the archive for older ones (``archived.py``).

An archived period of one series is its archived count; a period several series held (a
labelled estimate read whole) is their union, counted in Redis from their archived registers
as ``count()`` does, so it keeps the estimate's error.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
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
from .archived import MAX_ARCHIVED_REGISTERS, registers_count_steps, split_archived
from .keys import KIND
from .query import count_keys_steps


class EstimateHistory:
    """The history reads of :class:`~.model.UniqueEstimate`."""

    NOUN: ClassVar[str]
    name: str
    periods: tuple[str, ...]

    def _count_steps(self, client: AnyRedisClient, period: str | Period, when: When) -> Steps[int]:
        raise NotImplementedError

    def count(self, period: str | Period, when: When = None) -> int:
        raise NotImplementedError

    def history(self, period: str, start: When, end: When) -> list[tuple[int, int]]:
        """``(period start, estimated distinct items)`` of each ``period`` ("day", "week",
        "month") from ``start``'s to ``end``'s, oldest first: Redis for the periods it holds
        (one pipelined round trip), the archive for older ones (one query); at most
        ``MAX_HISTORY_PERIODS`` (``archive/horizon.py``) periods a call."""
        held, gone = self._history_plan(period, start, end)
        client = get_redis_connection()
        counts = drive(gather_steps([self._count_steps(client, p, None) for p in held]), client)
        return merged_counts(held, checked(counts), gone, self._archived_counts(gone))

    async def ahistory(self, period: str, start: When, end: When) -> list[tuple[int, int]]:
        """``history`` awaited."""
        held, gone = self._history_plan(period, start, end)
        client = get_async_connection()
        counts = checked(
            await adrive(gather_steps([self._count_steps(client, p, None) for p in held]), client)
        )
        return merged_counts(held, counts, gone, await sync_to_async(self._archived_counts)(gone))

    def _history_plan(
        self, period: str, start: When, end: When
    ) -> tuple[list[Period], list[Period]]:
        lo, hi = to_timestamp(start, "start"), to_timestamp(end, "end")
        periods = history_periods(self.NOUN, self.name, self.periods, period, lo, hi)
        return split_archived(periods, time.time())

    def _archived_counts(self, gone: Sequence[Period]) -> list[int]:
        """The archived count of each of ``gone``: a single series' row as it is, several
        series' rows united in Redis from their registers, none as 0. The unions are counted
        together, a shared pipeline per round trip, in batches of at most
        ``MAX_ARCHIVED_REGISTERS`` registers (one query of the archive each)."""
        from ..archive.reading import archived_rows

        if not gone:
            return []
        period, starts = gone[0].name, [int(p.start_ts) for p in gone]
        rows = archived_rows(KIND, self.name, period, starts)
        counts = [sum(n for n, _ in rows.get(start, [])) for start in starts]
        united = [i for i, start in enumerate(starts) if len(rows.get(start, [])) > 1]
        batch: list[int] = []
        for index in united:
            batch.append(index)
            if sum(len(rows[starts[i]]) for i in batch) >= MAX_ARCHIVED_REGISTERS:
                self._count_unions(period, [starts[i] for i in batch], batch, counts)
                batch = []
        if batch:
            self._count_unions(period, [starts[i] for i in batch], batch, counts)
        return counts

    def _count_unions(
        self, period: str, starts: list[int], indexes: list[int], counts: list[int]
    ) -> None:
        """``counts[indexes[k]]``: the union of the archived registers of ``starts[k]``."""
        from ..archive.reading import archived_rows

        rows = archived_rows(KIND, self.name, period, starts, data=True)
        steps = [
            registers_count_steps(
                self.name, [bytes(d) for _, d in rows.get(start, []) if d], count_keys_steps
            )
            for start in starts
        ]
        client = get_redis_connection()
        for index, count in zip(indexes, checked(drive(gather_steps(steps), client)), strict=True):
            counts[index] = count
