"""Unions of many period keys built into a temporary key in bounded steps: ``bitmap_union.lua``
reads at most ``MAX_SCRIPT_SOURCES`` keys a call ("nothing blocks Redis for long"), each call
ORing its keys into the result of the calls before it. The keys of one union share a slot (one
bitmap's), or the server is a single node (the series of a labelled bitmap)."""

from __future__ import annotations

from collections.abc import Sequence

from ..core.gather import pipelined_steps
from ..core.keys import to_str
from ..core.labels.uniting import checked, temporary_keys
from ..core.scripts import ScriptLibrary
from ..core.steps import Pipe, Script, Step, Steps
from .bounds import MAX_SCRIPT_SOURCES, TEMP_TTL_MS

script = ScriptLibrary(__name__.rpartition(".")[0])


def union_steps(keys: Sequence[str], temp: str, check: Sequence[str]) -> Steps[tuple[str, str]]:
    """OR ``keys`` into ``temp`` (with a TTL), one script call after the other. ``check``: a
    cached union's key, its stamp and its bitmap's generation key (or nothing), checked by the
    first call, which builds nothing while that cache is valid.

    Returns the generation the build started under (``""`` without ``check``) and its state:
    "skip" (the cache was valid), "built", or "empty" (none of ``keys`` existed)."""
    generation, present = "", 0
    for step, start in enumerate(range(0, len(keys), MAX_SCRIPT_SOURCES)):
        checked = list(check) if not step else []
        answer = yield Script(
            script("bitmap_union"),
            [temp, *checked, *keys[start : start + MAX_SCRIPT_SOURCES]],
            [TEMP_TTL_MS, int(step > 0), int(bool(checked))],
        )
        if not step:
            generation = to_str(answer[1])
        if int(answer[0]) == 1:
            return generation, "skip"
        present += int(answer[2])
    return generation, "built" if present else "empty"


def build_steps(keys: Sequence[str], target: str) -> Steps[int]:
    """OR ``keys`` into ``target`` (with a TTL), never cached: every script call in one
    pipelined round trip (a single node, or one slot, runs them in order); how many of
    ``keys`` existed."""
    calls = [
        Script(
            script("bitmap_union"),
            [target, *keys[start : start + MAX_SCRIPT_SOURCES]],
            [TEMP_TTL_MS, int(start > 0), 0],
        )
        for start in range(0, len(keys), MAX_SCRIPT_SOURCES)
    ]
    replies = yield from pipelined_steps(calls)
    return sum(int(reply[2]) for reply in checked(replies))


def scratch_keys(step: Step) -> list[str]:
    """What the first request of a query leaves in Redis, should the query be dropped after it
    (``core/labels/uniting.py``): a union built beforehand, or the result a "store" program
    kept (its other temporaries, it deleted; cached unions stay)."""
    ops = step.ops if isinstance(step, Pipe) else [step]
    kept = [
        op
        for op in ops
        if isinstance(op, Script)
        and (
            op.script.name == "bitmap_union"
            or (op.script.name == "bitmap_query" and "store" in op.args[2:3])
        )
    ]
    return temporary_keys(Pipe(kept), keep=lambda key: ":cache:" in key)
