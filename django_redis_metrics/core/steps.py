"""Reads and writes written once, run on the sync or the async client.

A method that needs more than one round trip, or decides its next command from a reply, is
written as a generator of :data:`Steps`: it validates its arguments, then yields each Redis
request (:class:`Op`, :class:`Pipe`, :class:`Script`, :class:`Calls`) and receives its reply (an
error reply is thrown into it), and returns its result. :func:`drive` runs it on a sync client;
``core.aio.adrive`` awaits each request on an ``redis.asyncio`` client. The logic, the
validation and the errors are therefore the same on both paths.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .batch import ScriptCall, run_calls
from .connection import RedisClient, get_redis_connection
from .scripts import KeyOrArg, LuaScript


@dataclass(frozen=True)
class Op:
    """One client method call, e.g. ``Op("zcount", key, lo, hi)`` (the async client has the
    same methods)."""

    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def __init__(self, method: str, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "kwargs", kwargs)


@dataclass(frozen=True)
class Pipe:
    """Client method calls sent as one non-transactional pipeline; the reply is their list
    (with ``raise_on_error=False``, error replies as exceptions in it)."""

    ops: Sequence[Op]
    raise_on_error: bool = True


@dataclass(frozen=True)
class Script:
    """One script call (EVALSHA, loaded on NOSCRIPT; a ``DRM_REFUSED`` reply raises
    :class:`~.scripts.MetricsRefused`)."""

    script: LuaScript
    keys: Sequence[KeyOrArg]
    args: Sequence[KeyOrArg] = field(default_factory=tuple)


@dataclass(frozen=True)
class Calls:
    """Write calls run as ``run_calls`` runs them (follow-ups included); the reply is their
    results."""

    calls: Sequence[ScriptCall]


Step = Op | Pipe | Script | Calls
T = TypeVar("T")
#: A generator of steps returning ``T``.
Steps = Generator[Step, Any, T]


def reads_steps(
    commands: Sequence[tuple[str, tuple[Any, ...]]], parse: Callable[[list[Any]], T]
) -> Steps[T]:
    """The reads a model's ``*_reads`` hook gives (``(client method name, args)`` pairs, and
    ``parse`` of their replies) as steps: each command in turn, then ``parse(replies)``."""
    replies = []
    for name, args in commands:
        replies.append((yield Op(name, *args)))
    return parse(replies)


def drive(steps: Steps[T], client: RedisClient | None = None) -> T:
    """Run ``steps`` on the sync ``client`` (default: the app's, taken once the steps have
    validated their arguments and made their first request)."""
    try:
        step = next(steps)
        client = client or get_redis_connection()
        while True:
            try:
                reply = run_step(client, step)
            except Exception as exc:
                step = steps.throw(exc)
            else:
                step = steps.send(reply)
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        finish(steps)


def finish(steps: Steps[Any]) -> None:
    """Close ``steps`` left unfinished by an interruption (a cancelled task, Ctrl-C), which is
    not thrown into them: clean-up steps in their ``finally`` cannot run then, and Python
    reports that as a ``RuntimeError``. What they would have removed carries a TTL."""
    with contextlib.suppress(RuntimeError):
        steps.close()


def run_step(client: RedisClient, step: Step) -> Any:
    """One step on the sync client."""
    if isinstance(step, Op):
        return getattr(client, step.method)(*step.args, **step.kwargs)
    if isinstance(step, Script):
        return step.script(client, step.keys, step.args)
    if isinstance(step, Calls):
        return run_calls(client, step.calls)
    pipe = client.pipeline(transaction=False)
    for op in step.ops:
        getattr(pipe, op.method)(*op.args, **op.kwargs)
    return pipe.execute(raise_on_error=step.raise_on_error)
