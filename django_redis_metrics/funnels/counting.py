"""A funnel of bitmaps counted in Redis: each step's users within the previous steps'.

A *window* names, for each step, the periods it reads (one period, or a range's cover of
months, weeks and days). Each step's keys (a labelled bitmap's: every series' too) are ORed into
a temporary key when there are several (``funnel.lua``'s "or" calls, ``MAX_SCRIPT_SOURCES`` keys
a call), then its "count" call ANDs the steps cumulatively, counting after each AND.

On a single node every call of every window goes in one pipelined round trip (a labelled step:
one more, to list its series: ``core/labels/uniting.py``). On Redis Cluster each bitmap lives
in its own slot: each step's union is made in its slot and copied into the first step's
(``bitmaps/unite.py``: two round trips per step group), one window after the other.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..bitmaps.bounds import MAX_SCRIPT_SOURCES, TEMP_TTL_MS
from ..bitmaps.building import build_steps
from ..bitmaps.keys import KIND
from ..bitmaps.unite import United, united_key_steps
from ..core.connection import AnyRedisClient, is_cluster
from ..core.gather import gather_steps, pipelined_steps
from ..core.keys import temp_key
from ..core.labels.uniting import checked, no_scratch, temporary_keys, with_union
from ..core.periods import Period
from ..core.scripts import ScriptLibrary
from ..core.steps import Op, Script, Steps

if TYPE_CHECKING:
    from ..bitmaps.model import UniqueBitmap

script = ScriptLibrary(__name__.rpartition(".")[0])

#: Per step, the periods it reads.
Window = tuple[tuple[Period, ...], ...]


def counts_steps(
    client: AnyRedisClient, steps: Sequence[UniqueBitmap], windows: Sequence[Window]
) -> Steps[list[list[int]]]:
    """The funnel's counts in each of ``windows``: per window, one count per step."""
    plain: list[list[UniqueBitmap]] = [[] for _ in steps]
    # Should the plain read be dropped after its first request (a labelled step): on a single
    # node that request's count deleted the unions it built; on Redis Cluster a step built in
    # the first step's slot may be left, unlinked then.
    scratch = temporary_keys if is_cluster(client) else no_scratch
    return (
        yield from with_union(
            list(steps),
            _counts_steps(client, steps, plain, windows),
            lambda found: _counts_steps(client, steps, found, windows),
            scratch,
        )
    )


def _counts_steps(
    client: AnyRedisClient,
    steps: Sequence[UniqueBitmap],
    found: Sequence[Sequence[UniqueBitmap]],
    windows: Sequence[Window],
) -> Steps[list[list[int]]]:
    members = [(step, *series) for step, series in zip(steps, found, strict=True)]
    if is_cluster(client):
        results = []
        for window in windows:
            results.append((yield from _cluster_window(client, members, window)))
        return results
    ops: list[Op | Script] = []
    last: list[int] = []
    for window in windows:
        ops += _window_calls(steps[0].name, members, window)
        last.append(len(ops) - 1)
    replies = checked((yield from pipelined_steps(ops)))
    return [[int(value) for value in replies[at]] for at in last]


def _window_calls(
    home: str, members: Sequence[tuple[UniqueBitmap, ...]], window: Window
) -> list[Op | Script]:
    """A single node: the union calls of the steps reading several keys, then the count."""
    token = uuid.uuid4().hex
    calls: list[Op | Script] = []
    keys: list[str] = []
    built: list[int] = []
    for index, (group, periods) in enumerate(zip(members, window, strict=True)):
        sources = [key for member in group for key in member.period_keys(periods)]
        if len(sources) == 1:
            keys.append(sources[0])
            built.append(0)
            continue
        target = temp_key(KIND, home, f"funnel:{token}:{index}")
        calls += [
            Script(
                script("funnel"),
                [target, *sources[start : start + MAX_SCRIPT_SOURCES]],
                ["or", TEMP_TTL_MS],
            )
            for start in range(0, len(sources), MAX_SCRIPT_SOURCES)
        ]
        keys.append(target)
        built.append(1)
    calls.append(_count_call(home, token, keys, built))
    return calls


def _count_call(home: str, token: str, keys: list[str], built: list[int]) -> Script:
    temp = temp_key(KIND, home, f"funnel:{token}:and")
    return Script(script("funnel"), [*keys, temp], ["count", TEMP_TTL_MS, *built])


def _cluster_window(
    client: AnyRedisClient, members: Sequence[tuple[UniqueBitmap, ...]], window: Window
) -> Steps[list[int]]:
    """Redis Cluster: every step's union brought into the first step's slot, then counted."""
    home = members[0][0]
    keys: list[str | None] = []
    builds: list[Steps[str]] = []
    for group, periods in zip(members, window, strict=True):
        sources = home.period_keys(periods)
        if all(member.name == home.name for member in group) and len(sources) == 1:
            keys.append(sources[0])  # the first bitmap's own key: no copy
            continue
        keys.append(None)
        if all(member.name == home.name for member in group):
            builds.append(_built(sources, temp_key(KIND, home.name, f"funnel:{uuid.uuid4().hex}")))
        else:
            builds.append(united_key_steps(client, United(home, group), periods))
    made = iter(checked((yield from gather_steps(builds))))
    built = [0 if key is not None else 1 for key in keys]
    final = [key if key is not None else str(next(made)) for key in keys]
    reply = yield _count_call(home.name, uuid.uuid4().hex, final, built)
    return [int(value) for value in reply]


def _built(sources: list[str], target: str) -> Steps[str]:
    yield from build_steps(sources, target)
    return target
