"""Counting a union of an estimate's period keys: one ``PFCOUNT`` over all of them.

The union of HyperLogLogs is exact as HyperLogLogs go (the merge keeps each register's
maximum), so a range counted over the fewest keys has the error of a single period. All keys of
an estimate share one hash tag, so the multi-key ``PFCOUNT`` works on Redis Cluster too. A union
of more than ``MAX_COUNT_KEYS`` keys is merged in bounded steps (``estimate_union.lua``) into a
temporary key with a TTL, so no single command blocks Redis for long.

A labelled estimate counts the union of its series (``unite.py``): they are listed in the first
round trip of the count (``core/labels/uniting.py``), and only if there are some are they read.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async

from ..core.aio import get_async_connection
from ..core.connection import AnyRedisClient, get_redis_connection, is_cluster
from ..core.drive import adrive, drive
from ..core.gather import pipelined_steps
from ..core.keys import temp_key
from ..core.labels.uniting import checked, temporary_keys, with_union
from ..core.periods import Period
from ..core.scripts import ScriptLibrary
from ..core.steps import Op, Script, Steps
from .archived import archived_count_steps, archived_registers
from .bounds import MAX_COUNT_KEYS as MAX_COUNT_KEYS
from .bounds import TEMP_TTL_MS as TEMP_TTL_MS
from .keys import KIND
from .unite import unite_steps

if TYPE_CHECKING:
    from .model import UniqueEstimate

script = ScriptLibrary(__name__.rpartition(".")[0])


@dataclass(frozen=True, eq=False)
class EstimateQuery:
    """The distinct items added in some periods of one estimate (a range's cover), counted
    in Redis by ``count()``."""

    estimate: UniqueEstimate
    periods: tuple[Period, ...]
    #: Periods Redis no longer holds, counted from their archived registers (``archived.py``).
    archived: tuple[Period, ...] = ()
    _registers: list[list[bytes]] = field(default_factory=list, repr=False)

    def registers(self) -> list[bytes]:
        """The archived periods' registers, read once from the archive."""
        if not self._registers:
            self._registers.append(archived_registers(self.estimate.name, self.archived))
        return self._registers[0]

    @property
    def keys(self) -> list[str]:
        """The period keys the count reads (only periods still retained; a labelled estimate's
        series' keys of the same periods are read too)."""
        return [self.estimate.key(p) for p in self.periods]

    def count(self) -> int:
        """Distinct items in the union of the periods (an estimate; see the docs' error)."""
        client = get_redis_connection()
        return drive(self.count_steps(client), client)

    async def acount(self) -> int:
        """``count`` awaited."""
        if self.archived:  # the database, off the loop
            await sync_to_async(self.registers)()
        client = get_async_connection()
        return await adrive(self.count_steps(client), client)

    def count_steps(self, client: AnyRedisClient, plain: Steps[int] | None = None) -> Steps[int]:
        """The count, over the estimate's series too when it has some; ``plain``: how to count
        the estimate's own keys (default: :func:`count_keys_steps`)."""
        estimate = self.estimate
        if self.archived:
            registers = self.registers()
            return (
                yield from archived_count_steps(estimate, self.periods, registers, count_keys_steps)
            )
        return (
            yield from with_union(
                [estimate],
                plain or count_keys_steps(self.keys, estimate.name),
                lambda found: self._united_steps(client, (estimate, *found[0])),
                temporary_keys,
            )
        )

    def _united_steps(
        self, client: AnyRedisClient, members: Sequence[UniqueEstimate]
    ) -> Steps[int]:
        """The count of the union of ``members``' keys of the periods (the estimate's first)."""
        if is_cluster(client):
            return (yield from unite_steps(members, self.periods, self.estimate.name))
        keys = [member.key(period) for member in members for period in self.periods]
        return (yield from merged_count_steps(keys, self.estimate.name))

    def __repr__(self) -> str:
        parts = ", ".join(p.key_part for p in (*self.archived, *self.periods)) or "nothing"
        return f"<{self.estimate.name}: {parts}>"


def count_keys_steps(keys: Sequence[str], home: str) -> Steps[int]:
    """``PFCOUNT`` of ``keys`` (one slot: ``home``'s), merged into a temporary key in steps of
    ``MAX_COUNT_KEYS`` when there are more, one step after the other."""
    if not keys:
        return 0
    if len(keys) <= MAX_COUNT_KEYS:
        # Through execute_command: redis-py's cluster pipeline refuses its pfcount().
        return int((yield Op("execute_command", "PFCOUNT", *keys)))
    temp = temp_key(KIND, home, f"union:{uuid.uuid4().hex}")
    answer = 0
    for start in range(0, len(keys), MAX_COUNT_KEYS):
        chunk = keys[start : start + MAX_COUNT_KEYS]
        last = start + MAX_COUNT_KEYS >= len(keys)
        answer = yield Script(script("estimate_union"), [temp, *chunk], [TEMP_TTL_MS, int(last)])
    return int(answer)


def merged_count_steps(keys: Sequence[str], home: str) -> Steps[int]:
    """:func:`count_keys_steps` of keys in any slot of a single node, or in one slot, every
    step in one pipelined round trip."""
    if len(keys) <= MAX_COUNT_KEYS:
        return (yield from count_keys_steps(keys, home))
    temp = temp_key(KIND, home, f"union:{uuid.uuid4().hex}")
    calls = [
        Script(
            script("estimate_union"),
            [temp, *keys[start : start + MAX_COUNT_KEYS]],
            [TEMP_TTL_MS, int(start + MAX_COUNT_KEYS >= len(keys))],
        )
        for start in range(0, len(keys), MAX_COUNT_KEYS)
    ]
    return int(checked((yield from pipelined_steps(calls)))[-1])
