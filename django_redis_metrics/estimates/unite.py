"""A labelled estimate counted as a whole on Redis Cluster: the union of its series' HyperLogLogs.

The items of a labelled estimate in some periods are those of any of its series (and of the
metric's own keys, which a labelled estimate never writes). On a single node one ``PFCOUNT``
reads every series' keys (``query.py``). On Redis Cluster each series has its own hash tag, so
its own slot, and ``PFCOUNT``/``PFMERGE`` take one slot: each member's union of the periods is
merged in its own slot and exported through the client (a HyperLogLog string: a few hundred
bytes while sparse, at most about 12 KB), imported into a temporary key in the metric's slot,
merged there (one ``PFMERGE`` per ``IMPORTS_PER_CALL`` strings, into a dense key) and counted.
``UNITE_GROUP`` members travel together: two round trips per group (the last import counts),
at most a group's HyperLogLogs held in the client.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from ..core.gather import gather_steps, pipelined_steps
from ..core.keys import temp_key
from ..core.labels.uniting import checked
from ..core.periods import Period
from ..core.scripts import ScriptLibrary
from ..core.steps import Script, Steps
from .bounds import IMPORTS_PER_CALL, MAX_COUNT_KEYS, TEMP_TTL_MS, UNITE_GROUP
from .keys import KIND

script = ScriptLibrary(__name__.rpartition(".")[0])


class Estimate(Protocol):
    """What a count needs of an estimate: its name and its period keys."""

    @property
    def name(self) -> str: ...

    def key(self, period: Period) -> str: ...


def unite_steps(members: Sequence[Estimate], periods: tuple[Period, ...], home: str) -> Steps[int]:
    """Redis Cluster: the count of the union of every member's keys of ``periods``, merged in a
    temporary key of ``home``'s slot, each member's exported from its own slot."""
    target = temp_key(KIND, home, f"unite:{uuid.uuid4().hex}")
    scratch = [f"{target}:in:{n}" for n in range(IMPORTS_PER_CALL)]
    count = 0
    for start in range(0, len(members), UNITE_GROUP):
        group = members[start : start + UNITE_GROUP]
        exported = yield from gather_steps([_export_steps(member, periods) for member in group])
        payloads = [payload for payload in checked(exported) if payload]
        last = start + UNITE_GROUP >= len(members)
        # One script only in the pipeline: should the server not have it yet, every call is
        # sent again, in order; the last call counts the union (and deletes it).
        chunks = range(0, max(len(payloads), 1 if last else 0), IMPORTS_PER_CALL)
        calls = [
            Script(
                script("estimate_import"),
                [target, *scratch[: len(payloads[at : at + IMPORTS_PER_CALL])]],
                [
                    TEMP_TTL_MS,
                    int(last and at + IMPORTS_PER_CALL >= len(payloads)),
                    *payloads[at : at + IMPORTS_PER_CALL],
                ],
            )
            for at in chunks
        ]
        replies = checked((yield from pipelined_steps(calls)))
        count = int(replies[-1]) if last else 0
    return count


def _export_steps(member: Estimate, periods: tuple[Period, ...]) -> Steps[Any]:
    """``member``'s union of ``periods`` as a HyperLogLog string (``None`` when none of its
    keys exists), merged in its own slot in one pipelined round trip."""
    keys = [member.key(period) for period in periods]
    temp = temp_key(KIND, member.name, f"export:{uuid.uuid4().hex}")
    calls = [
        Script(
            script("estimate_export"),
            [temp, *keys[start : start + MAX_COUNT_KEYS]],
            [TEMP_TTL_MS, int(start + MAX_COUNT_KEYS >= len(keys))],
        )
        for start in range(0, len(keys), MAX_COUNT_KEYS)
    ]
    replies = checked((yield from pipelined_steps(calls)))
    return replies[-1] if replies else None
