"""Many generators of steps in one shared pipeline per round: the gather driver's logic, itself
a generator of steps (so it runs on either client, and is tested without Redis).

Each round takes the pending request of every generator still running (an ``Op``, a ``Pipe``
of them, or a ``Script``), sends them all as one pipeline (``CHUNK`` commands a pipeline at
most), and hands each generator its own replies. A script the server has not cached yet
(NOSCRIPT) is loaded and its call sent again once. One generator's error reply, or its own
exception, ends that generator only: its result is the exception.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.exceptions import NoScriptError

from .scripts import LuaScript, as_refusal
from .steps import CHUNK, Op, Pipe, Script, Step, Steps, chunked_steps


def gather_steps(many: Sequence[Steps[Any]], chunk: int = CHUNK) -> Steps[list[Any]]:
    """The result of each of ``many`` (or the exception it raised), in order."""
    results: list[Any] = [None] * len(many)
    pending: dict[int, Step] = {}
    for index, steps in enumerate(many):
        _advance(index, steps, lambda s: next(s), pending, results)
    while pending:
        round_ = list(pending.items())
        pending = {}
        ops = [op for _index, step in round_ for op in _ops(step)]
        replies = yield from pipelined_steps(ops, chunk)
        at = 0
        for index, step in round_:
            size = len(_ops(step))
            reply = _reply(step, replies[at : at + size])
            at += size
            if isinstance(reply, Exception):
                _advance(index, many[index], lambda s, e=reply: s.throw(e), pending, results)
            else:
                _advance(index, many[index], lambda s, r=reply: s.send(r), pending, results)
    return results


def _advance(
    index: int, steps: Steps[Any], move: Any, pending: dict[int, Step], results: list[Any]
) -> None:
    try:
        pending[index] = move(steps)
    except StopIteration as done:
        results[index] = done.value
    except Exception as exc:
        results[index] = exc


def _ops(step: Step) -> Sequence[Op | Script]:
    return step.ops if isinstance(step, Pipe) else [step]


def _reply(step: Step, replies: list[Any]) -> Any:
    """A step's reply from its share of the pipeline's: an error reply as the exception."""
    if isinstance(step, Pipe):
        if step.raise_on_error:
            for reply in replies:
                if isinstance(reply, Exception):
                    return as_refusal(reply)
        return replies
    (reply,) = replies
    return as_refusal(reply) if isinstance(reply, Exception) else reply


def pipelined_steps(ops: Sequence[Op | Script], chunk: int = CHUNK) -> Steps[list[Any]]:
    """The replies of ``ops``, ``chunk`` a pipeline (error replies in place as exceptions);
    scripts missing on the server loaded, and their calls sent once more."""
    replies = yield from chunked_steps(ops, chunk, raise_on_error=False)
    missing = [i for i, reply in enumerate(replies) if isinstance(reply, NoScriptError)]
    if not missing:
        return replies
    scripts: dict[str, LuaScript] = {}
    for i in missing:
        op = ops[i]
        if isinstance(op, Script):
            scripts[op.script.sha] = op.script
    for script in scripts.values():
        yield Op("script_load", script.source)
    again = yield from chunked_steps([ops[i] for i in missing], chunk, raise_on_error=False)
    for i, reply in zip(missing, again, strict=True):
        replies[i] = reply
    return replies
