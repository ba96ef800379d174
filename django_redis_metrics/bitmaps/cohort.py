"""Retention tables: how many of the users of a period were marked again in later ones.

Row i holds the users of period i, then how many of them were marked again 1, 2, ... periods
later. A row is a script call per ``MAX_SCRIPT_SOURCES`` keys (``bitmap_cohort.lua``: BITOP AND
and BITCOUNT over bounded keys), every call of the table in one pipelined round trip.

The table of a labelled bitmap is that of its union: the union of its series in each period is
built first, in the metric's slot (``unite.py``: one more round trip on a single node; on Redis
Cluster two per ``UNITE_GROUP`` series and period, one period after the other so that the
client holds one period's bitmaps at a time), then the table is read over those unions.

A table between two bitmaps (``returning=other``: signed up, then bought) counts, in row i,
the users of ``bitmap`` in period i found in ``other`` 1, 2, ... periods later: the same calls
with the later keys taken from ``other``. On a single node every key is reachable from one
script, so it costs what a table of one bitmap costs: one round trip (four when either is
labelled: the series listed with the first request, then their unions built, the table read,
the unions unlinked). On Redis Cluster ``other`` lives in another slot: each of its
later periods (the union of its series, for a labelled one) is copied into ``bitmap``'s slot
first, as unions of series are (two round trips per period, one period after the other).
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
from .archived import ArchivedBits, with_archived
from .bounds import MAX_SCRIPT_SOURCES, TEMP_TTL_MS
from .keys import KIND
from .unite import United, united_key_steps

if TYPE_CHECKING:
    from .model import UniqueBitmap

script = ScriptLibrary(__name__.rpartition(".")[0])


def cohort_steps(
    client: AnyRedisClient,
    bitmap: UniqueBitmap,
    periods: Sequence[Period],
    archived: dict[Period, ArchivedBits],
) -> Steps[list[list[int]]]:
    """The retention table of ``bitmap`` over ``periods`` (consecutive, oldest first); those
    Redis no longer holds read from the archive into the temporary keys of ``archived``."""
    keys = [archived[p].temp if p in archived else bitmap.key(p) for p in periods]
    table = with_union(
        [bitmap],
        _table_steps(bitmap.name, keys),
        lambda found: _united_steps(client, bitmap, found[0], periods, archived),
    )
    return (yield from with_archived(list(archived.values()), table))


def pair_steps(
    client: AnyRedisClient,
    bitmap: UniqueBitmap,
    other: UniqueBitmap,
    periods: Sequence[Period],
) -> Steps[list[list[int]]]:
    """The retention table of ``bitmap``'s users over ``periods`` found later in ``other``.

    Its first request leaves nothing behind should it be dropped (a labelled bitmap among the
    two): the table's scripts, and on Redis Cluster the exports of one key each, delete their
    temporary keys themselves."""
    return (
        yield from with_union(
            [bitmap, other],
            _pair_table_steps(client, bitmap, [], other, [], periods),
            lambda found: _pair_table_steps(client, bitmap, found[0], other, found[1], periods),
        )
    )


def _pair_table_steps(
    client: AnyRedisClient,
    bitmap: UniqueBitmap,
    own: list[UniqueBitmap],
    other: UniqueBitmap,
    theirs: list[UniqueBitmap],
    periods: Sequence[Period],
) -> Steps[list[list[int]]]:
    """The table of ``bitmap`` (with its series ``own``) against ``other`` (with ``theirs``):
    the keys each side reads built first where they must be (a union of series, a copy into
    ``bitmap``'s slot), then the table in one pipelined round trip, then the built keys
    unlinked."""
    builds: dict[int, Steps[str]] = {}
    heads = [bitmap.key(period) for period in periods]
    laters = [other.key(period) for period in periods]
    if own:
        united = United(bitmap, (bitmap, *own))
        for i, period in enumerate(periods):
            builds[i] = united_key_steps(client, united, (period,))
    cluster = is_cluster(client)
    if theirs or cluster:
        # On Redis Cluster the union lands in ``bitmap``'s slot (its ``name``), on a single
        # node in ``other``'s: a copy is only needed across slots.
        home = bitmap if cluster else other
        united = United(home, (other, *theirs))
        for i, period in enumerate(periods[1:], start=1):
            builds[len(periods) + i] = united_key_steps(client, united, (period,))
    built: dict[int, str] = {}
    if cluster:
        for index, build in builds.items():
            built[index] = yield from build
    elif builds:
        replies = checked((yield from gather_steps(list(builds.values()))))
        built = dict(zip(builds, replies, strict=True))
    for index, key in built.items():
        if index < len(periods):
            heads[index] = key
        else:
            laters[index - len(periods)] = key
    table = yield from _table_steps(bitmap.name, heads, laters)
    if built:  # they carry a TTL too
        yield Pipe([Op("unlink", key) for key in built.values()])
    return table


def _table_steps(
    home: str, keys: list[str], returning: list[str] | None = None
) -> Steps[list[list[int]]]:
    """The table over ``keys`` (one slot: ``home``'s), in one pipelined round trip."""
    token = uuid.uuid4().hex
    calls = query_plan.cohort_calls(
        keys, lambda n: temp_key(KIND, home, f"cohort:{token}:{n}"), MAX_SCRIPT_SOURCES, returning
    )
    cohort = script("bitmap_cohort")
    replies = yield from pipelined_steps([Script(cohort, keys, [TEMP_TTL_MS]) for _, keys in calls])
    return query_plan.cohort_rows(len(keys), calls, replies)


def _united_steps(
    client: AnyRedisClient,
    bitmap: UniqueBitmap,
    series: list[UniqueBitmap],
    periods: Sequence[Period],
    archived: dict[Period, ArchivedBits],
) -> Steps[list[list[int]]]:
    """The table of the union of ``bitmap`` and its ``series``, period by period (an archived
    period's stand-in holds the union of its series already)."""
    united = United(bitmap, (bitmap, *series))
    held = [period for period in periods if period not in archived]
    builds = [united_key_steps(client, united, (period,)) for period in held]
    built: list[str] = []
    if is_cluster(client):
        for build in builds:
            built.append((yield from build))
    else:
        built = list(checked((yield from gather_steps(builds))))
    unions = dict(zip(held, built, strict=True))
    keys = [archived[p].temp if p in archived else unions[p] for p in periods]
    table = yield from _table_steps(bitmap.name, keys)
    if built:
        yield Pipe([Op("unlink", key) for key in built])
    return table
