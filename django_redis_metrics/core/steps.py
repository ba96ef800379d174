"""The one idiom for talking to Redis: an exchange is a generator of steps.

A method that talks to Redis is written as a generator of :data:`Steps`: it validates its
arguments, then yields each request (:class:`Op`, :class:`Pipe`, :class:`Script`, or a write's
:class:`ScriptCall`) and receives its reply (an error reply is thrown into it), and returns its
result. It never touches a client, so it can be run, and tested, with canned replies. The
drivers of ``core/drive.py`` run it: ``drive`` on the sync client, ``adrive`` on the running
loop's async client, ``gather`` many of them in one shared pipeline. The logic, the validation
and the errors are therefore the same on every path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from redis.exceptions import NoScriptError, ResponseError

from .scripts import KeyOrArg, LuaScript, as_refusal, once_key

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Op:
    """One client method call, e.g. ``Op("zcount", key, lo, hi)`` (the sync and the async
    client, and their pipelines, have the same methods). Also the one spelling of a read that a
    caller queues on a pipeline of its own: ``(op.method, op.args)``."""

    method: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]

    def __init__(self, method: str, *args: Any, **kwargs: Any) -> None:
        object.__setattr__(self, "method", method)
        object.__setattr__(self, "args", args)
        object.__setattr__(self, "kwargs", kwargs)


@dataclass(slots=True)
class Script:
    """One script call: EVALSHA, EVAL once on NOSCRIPT, a ``DRM_REFUSED`` reply raised as
    :class:`~.scripts.MetricsRefused`. In a :class:`Pipe`, an EVALSHA routed by its first key
    (its NOSCRIPT reply comes back as an error, as any other)."""

    script: LuaScript
    keys: Sequence[KeyOrArg]
    args: Sequence[KeyOrArg] = field(default_factory=tuple)

    def steps(self) -> Steps[Any]:
        """This call as plain commands (how the async driver runs it)."""
        size = len(self.keys)
        try:
            try:
                return (yield Op("evalsha", self.script.sha, size, *self.keys, *self.args))
            except NoScriptError:
                return (yield Op("eval", self.script.source, size, *self.keys, *self.args))
        except ResponseError as exc:
            refusal = as_refusal(exc)
            if refusal is exc:
                raise
            raise refusal from exc


#: What a write's follow-up is given: the script's reply; it yields the steps that follow it
#: (e.g. listing the metric in its catalogue on a cluster) and returns the write's result.
FollowUp = Callable[[Any], "Steps[Any]"]


@dataclass(slots=True)
class ScriptCall(Script):
    """One atomic write: a script call, and the steps that follow its reply (``then``).

    Many are sent in one round trip by ``core.batch.calls_steps`` (a :class:`~.batch.Batch`,
    the sender); one refused by Redis does not stop the others."""

    #: The follow-up of a reply that is neither an error nor a duplicate; ``None``: the reply
    #: is the result.
    then: FollowUp | None = None
    #: Made by :meth:`once`: a reply of :data:`~.scripts.DUPLICATE` means "already applied".
    idempotent: bool = False

    def once(self, sender: str, seq: int, previous: int = 0) -> ScriptCall:
        """This call through its script's idempotent variant, numbered ``seq`` by ``sender``:
        sent again, it is not applied again (and its follow-up is skipped). ``previous``: the
        number of the call before it in its batch on the same metric (same :meth:`once_key`),
        which must be applied first; 0 if none."""
        return ScriptCall(
            self.script.idempotent(),
            [*self.keys, self.once_key()],
            [*self.args, sender, seq, previous],
            self.then,
            idempotent=True,
        )

    def once_key(self) -> str:
        """The hash remembering which of this metric's calls were applied."""
        return once_key(str(self.keys[0]))


@dataclass(frozen=True, slots=True)
class Pipe:
    """Commands sent as one non-transactional pipeline; the reply is their list (with
    ``raise_on_error=False``, error replies as exceptions in it)."""

    ops: Sequence[Op | Script]
    raise_on_error: bool = True


Step = Op | Pipe | Script
#: A generator of steps returning ``T``.
Steps = Generator[Step, Any, T]

#: Most commands sent in one pipeline by :func:`chunked_steps` and the gather driver.
CHUNK = 1000


def pipe_steps(ops: Sequence[Op | Script], *, raise_on_error: bool = True) -> Steps[list[Any]]:
    """The replies of ``ops`` sent as one pipeline (none when there are no ``ops``)."""
    return list((yield Pipe(ops, raise_on_error))) if ops else []


def chunked_steps(
    ops: Sequence[Op | Script], chunk: int = CHUNK, *, raise_on_error: bool = True
) -> Steps[list[Any]]:
    """The replies of ``ops``, in order, sent ``chunk`` a pipeline: one round trip per chunk
    (with ``raise_on_error`` false, an error reply is returned in its place)."""
    replies: list[Any] = []
    for start in range(0, len(ops), chunk):
        replies += yield Pipe(ops[start : start + chunk], raise_on_error)
    return replies


#: A read as a caller's own pipeline takes it: the name of a redis-py pipeline method and its
#: arguments (what the public ``*_reads()`` methods give).
Read = tuple[str, tuple[Any, ...]]


def reads_of(make: Callable[[], Steps[T]]) -> tuple[list[Read], Callable[[Sequence[Any]], T]]:
    """A read of one round trip (one :class:`Op` or :class:`Pipe` of them) for a caller's own
    pipeline: ``(commands, parse)``, ``parse(replies)`` turning their replies into its result
    (as often as asked: each parse runs a fresh generator of ``make()``)."""
    step = next(make())
    ops = step.ops if isinstance(step, Pipe) else [step]
    commands: list[Read] = []
    for op in ops:
        if not isinstance(op, Op) or op.kwargs:
            raise TypeError(f"{op!r} cannot be queued as a (method, args) read.")
        commands.append((op.method, op.args))

    def parse(replies: Sequence[Any]) -> T:
        steps = make()
        next(steps)
        try:
            steps.send(list(replies) if isinstance(step, Pipe) else replies[0])
        except StopIteration as done:
            result: T = done.value
            return result
        raise TypeError("A read of more than one round trip cannot be queued on a pipeline.")

    return commands, parse


def finish(steps: Steps[Any]) -> None:
    """Close ``steps`` left unfinished by an interruption (a cancelled task, Ctrl-C), which is
    not thrown into them: clean-up steps in their ``finally`` cannot run then, and Python
    reports that as a ``RuntimeError``. What they would have removed carries a TTL."""
    with contextlib.suppress(RuntimeError):
        steps.close()
