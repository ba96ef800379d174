"""Retention tables: how many of the users of a period were marked again in later ones.

Row i holds the users of period i, then how many of them were marked again 1, 2, ... periods
later. A row is a script call per ``MAX_SCRIPT_SOURCES`` keys (``bitmap_cohort.lua``: BITOP AND
and BITCOUNT over bounded keys), every call of the table in one pipelined round trip.

The table of a labelled bitmap is that of its union: the union of its series in each period is
built first, in the metric's slot (``unite.py``: one more round trip on a single node; on Redis
Cluster two per ``UNITE_GROUP`` series and period, one period after the other so that the
client holds one period's bitmaps at a time), then the table is read over those unions.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..core.connection import AnyRedisClient, is_cluster
from ..core.gather import gather_steps, pipelined_steps
from ..core.keys import temp_key
from ..core.labels.uniting import checked, with_union
from ..core.periods import Period
from ..core.scripts import ScriptLibrary
from ..core.steps import Op, Pipe, Script, Steps
from . import query_plan
from .bounds import MAX_SCRIPT_SOURCES, TEMP_TTL_MS
from .keys import KIND
from .unite import United, united_key_steps

if TYPE_CHECKING:
    from .model import UniqueBitmap

script = ScriptLibrary(__name__.rpartition(".")[0])


def cohort_steps(
    client: AnyRedisClient, bitmap: UniqueBitmap, periods: Sequence[Period]
) -> Steps[list[list[int]]]:
    """The retention table of ``bitmap`` over ``periods`` (consecutive, oldest first)."""
    keys = [bitmap.key(period) for period in periods]
    return (
        yield from with_union(
            [bitmap],
            _table_steps(bitmap.name, keys),
            lambda found: _united_steps(client, bitmap, found[0], periods),
        )
    )


def _table_steps(home: str, keys: list[str]) -> Steps[list[list[int]]]:
    """The table over ``keys`` (one slot: ``home``'s), in one pipelined round trip."""
    token = uuid.uuid4().hex
    calls = query_plan.cohort_calls(
        keys, lambda n: temp_key(KIND, home, f"cohort:{token}:{n}"), MAX_SCRIPT_SOURCES
    )
    cohort = script("bitmap_cohort")
    replies = yield from pipelined_steps([Script(cohort, keys, [TEMP_TTL_MS]) for _, keys in calls])
    return query_plan.cohort_rows(len(keys), calls, replies)


def _united_steps(
    client: AnyRedisClient,
    bitmap: UniqueBitmap,
    series: list[UniqueBitmap],
    periods: Sequence[Period],
) -> Steps[list[list[int]]]:
    """The table of the union of ``bitmap`` and its ``series``, period by period."""
    united = United(bitmap, (bitmap, *series))
    builds = [united_key_steps(client, united, (period,)) for period in periods]
    keys: list[str] = []
    if is_cluster(client):
        for build in builds:
            keys.append((yield from build))
    else:
        keys = list(checked((yield from gather_steps(builds))))
    table = yield from _table_steps(bitmap.name, keys)
    yield Pipe([Op("unlink", key) for key in keys])
    return table
