"""A labelled bitmap read as a whole: each period the union of its series'
(``core/labels/uniting.py``).

The users of a labelled bitmap in a period are those of any of its series in that period (and
of the metric's own key, which a labelled bitmap never writes). A query over the metric has
each of its leaves read every member's keys of the leaf's periods (:class:`United`).

On a single node those keys are ORed where they are, by script calls of at most
``MAX_SCRIPT_SOURCES`` keys each, all sent in one pipelined round trip.

On Redis Cluster each series has its own hash tag, so its own slot, and BITOP takes one slot:
each member's union of the periods is made in its own slot and exported through the client
(DUMP when sparse, whose LZF compression shrinks it many times, else its bytes: one bit per
user id up to the highest marked, 125 KB per million ids), then imported into a temporary key
in the metric's slot and ORed there. ``UNITE_GROUP`` members travel together: two round trips
per group, and at most a group's bitmaps held in the client at once.

Copying a whole operand into another slot (a query combining two bitmaps) is here too.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Protocol

from ..core.connection import AnyRedisClient, RedisClient, is_cluster
from ..core.drive import drive
from ..core.gather import gather_steps, pipelined_steps
from ..core.keys import temp_key, to_str
from ..core.labels.uniting import checked
from ..core.periods import Period
from ..core.scripts import ScriptLibrary
from ..core.steps import Op, Script, Steps
from .bounds import IMPORTS_PER_CALL, MAX_SCRIPT_SOURCES, TEMP_TTL_MS, UNITE_GROUP
from .building import build_steps
from .keys import KIND

script = ScriptLibrary(__name__.rpartition(".")[0])


class Bitmap(Protocol):
    """What a query needs of a bitmap: its name, its period keys, its cache generation."""

    @property
    def name(self) -> str: ...

    @property
    def gen_key(self) -> str: ...

    def key(self, period: Period) -> str: ...

    def period_keys(self, periods: tuple[Period, ...]) -> list[str]: ...


@dataclass(frozen=True, eq=False)
class United:
    """A bitmap and its series read as one: a period's keys are every member's key of it.

    Its temporary keys live in the metric's slot (``name``). Its unions are never cached: a
    late mark into a finished period of a series changes that series' generation only."""

    metric: Bitmap
    #: The metric itself first, then its series.
    members: tuple[Bitmap, ...]

    @property
    def name(self) -> str:
        return self.metric.name

    @property
    def gen_key(self) -> str:
        return self.metric.gen_key

    def key(self, period: Period) -> str:
        return self.metric.key(period)

    def period_keys(self, periods: tuple[Period, ...]) -> list[str]:
        return [key for member in self.members for key in member.period_keys(periods)]


def united_key_steps(
    client: AnyRedisClient, united: United, periods: tuple[Period, ...]
) -> Steps[str]:
    """A temporary key in the metric's slot (with a TTL; missing if nobody was marked) holding
    the union of ``united``'s keys of ``periods``, on either deployment."""
    target = temp_key(KIND, united.name, f"unite:{uuid.uuid4().hex}")
    if is_cluster(client):
        yield from unite_steps(united, periods, target)
    else:
        yield from build_steps(united.period_keys(periods), target)
    return target


def unite_steps(united: United, periods: tuple[Period, ...], target: str) -> Steps[None]:
    """Redis Cluster: OR every member's union of ``periods`` into ``target`` (a temporary key
    in the metric's slot), each exported from its own slot, ``UNITE_GROUP`` at a time."""
    scratch = f"{target}:in"
    members = united.members
    for start in range(0, len(members), UNITE_GROUP):
        group = members[start : start + UNITE_GROUP]
        exported = yield from gather_steps([_export_steps(member, periods) for member in group])
        pairs: list[Any] = []
        for payload in checked(exported):
            if payload:
                pairs += [to_str(payload[0]), payload[1]]
        step = 2 * IMPORTS_PER_CALL
        calls = [
            Script(
                script("bitmap_import"), [target, scratch], [TEMP_TTL_MS, *pairs[at : at + step]]
            )
            for at in range(0, len(pairs), step)
        ]
        checked((yield from pipelined_steps(calls)))


def _export_steps(member: Bitmap, periods: tuple[Period, ...]) -> Steps[Any]:
    """``member``'s union of ``periods``, as ``bitmap_export.lua`` answers it (``None`` when
    none of its keys exists), made in its own slot in one pipelined round trip."""
    keys = member.period_keys(periods)
    temp = temp_key(KIND, member.name, f"export:{uuid.uuid4().hex}")
    calls = [
        Script(
            script("bitmap_export"),
            [temp, *keys[start : start + MAX_SCRIPT_SOURCES]],
            [TEMP_TTL_MS, int(start + MAX_SCRIPT_SOURCES >= len(keys))],
        )
        for start in range(0, len(keys), MAX_SCRIPT_SOURCES)
    ]
    replies = checked((yield from pipelined_steps(calls)))
    return replies[-1] if replies else None


def copy_bitmap(client: RedisClient, source: str, target: str, *, sparse: bool) -> None:
    drive(copy_steps(source, target, sparse=sparse), client)


def copy_steps(source: str, target: str, *, sparse: bool) -> Steps[None]:
    """Copy ``source`` to ``target`` (another slot) with a TTL, through the client.

    A sparse bitmap (under one set bit per 8 bytes, mostly zero bytes) goes as DUMP/RESTORE,
    whose LZF compression shrinks it many times; a dense one as GET + SET PX, which skips the
    compression attempt and the checksum (about 3x faster at 16 MB).
    """
    if sparse:
        payload = yield Op("dump", source)
        if payload is not None:
            if not isinstance(payload, bytes):
                raise TypeError("Copying a bitmap across slots needs a client returning bytes.")
            yield Op("restore", target, TEMP_TTL_MS, payload, replace=True)
        return
    value = yield Op("get", source)
    if value is not None:
        yield Op("set", target, value, px=TEMP_TTL_MS)
