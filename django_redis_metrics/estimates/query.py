"""Counting a union of an estimate's period keys: one ``PFCOUNT`` over all of them.

The union of HyperLogLogs is exact as HyperLogLogs go (the merge keeps each register's
maximum), so a range counted over the fewest keys has the error of a single period. All keys of
an estimate share one hash tag, so the multi-key ``PFCOUNT`` works on Redis Cluster too. A union
of more than ``MAX_COUNT_KEYS`` keys is merged in bounded steps (``estimate_union.lua``) into a
temporary key with a TTL, so no single command blocks Redis for long.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Protocol

from ..core.drive import adrive, drive
from ..core.keys import temp_key
from ..core.periods import Period
from ..core.scripts import ScriptLibrary
from ..core.steps import Op, Script, Steps
from .keys import KIND

script = ScriptLibrary(__name__.rpartition(".")[0])

#: Most keys one command merges: a dense HyperLogLog is 16,384 registers, about 12 KB.
MAX_COUNT_KEYS = 64
#: TTL of the temporary union of a long range (deleted by its last step; this is a net).
TEMP_TTL_MS = 60_000


class Estimate(Protocol):
    """What a query needs of an estimate: its name and its period keys."""

    @property
    def name(self) -> str: ...

    def key(self, period: Period) -> str: ...


@dataclass(frozen=True, eq=False)
class EstimateQuery:
    """The distinct items added in some periods of one estimate (a range's cover), counted
    in Redis by ``count()``."""

    estimate: Estimate
    periods: tuple[Period, ...]

    @property
    def keys(self) -> list[str]:
        """The period keys the count reads (only periods still retained)."""
        return [self.estimate.key(p) for p in self.periods]

    def count(self) -> int:
        """Distinct items in the union of the periods (an estimate; see the docs' error)."""
        return drive(self._count_steps())

    async def acount(self) -> int:
        """``count`` awaited."""
        return await adrive(self._count_steps())

    def _count_steps(self) -> Steps[int]:
        keys = self.keys
        if not keys:
            return 0
        if len(keys) <= MAX_COUNT_KEYS:
            return int((yield Op("pfcount", *keys)))
        temp = temp_key(KIND, self.estimate.name, f"union:{uuid.uuid4().hex}")
        answer = 0
        for start in range(0, len(keys), MAX_COUNT_KEYS):
            chunk = keys[start : start + MAX_COUNT_KEYS]
            last = start + MAX_COUNT_KEYS >= len(keys)
            answer = yield Script(
                script("estimate_union"), [temp, *chunk], [TEMP_TTL_MS, int(last)]
            )
        return int(answer)

    def __repr__(self) -> str:
        parts = ", ".join(p.key_part for p in self.periods) or "nothing"
        return f"<{self.estimate.name}: {parts}>"
