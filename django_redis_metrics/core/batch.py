"""Model writes (Lua script calls) one at a time or many in a single pipelined round trip.

Every write a model makes is a :class:`~.steps.ScriptCall`. :func:`calls_steps` sends one call
as one EVALSHA, or many as one non-transactional pipeline; scripts the server has not cached yet
(NOSCRIPT) are loaded and only those calls re-sent, which is safe because a NOSCRIPT call never
ran. Then come the steps of each call's follow-up. It is a generator of steps, so a write is
sent the same way by every driver (``run_calls`` and :class:`Batch` drive it on the sync client).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from redis.exceptions import (
    AskError,
    ClusterError,
    ConnectionError,
    InvalidResponse,
    NoScriptError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    ResponseError,
    TimeoutError,
    TryAgainError,
)

from .connection import RedisClient, get_redis_connection
from .drive import drive
from .scripts import (
    OUT_OF_ORDER,
    REFUSED,
    LuaScript,
    MetricsRefused,
    as_refusal,
    error_code,
    is_duplicate,
    is_script_error,
)
from .steps import Op, Pipe, ScriptCall, Steps

__all__ = ["Batch", "FoldedCall", "OpenRun", "ScriptCall", "calls_steps", "is_outage", "run_calls"]


def run_calls(
    client: RedisClient,
    calls: Sequence[ScriptCall],
    errors: list[tuple[ScriptCall, Exception]] | None = None,
    duplicates: list[ScriptCall] | None = None,
) -> list[Any]:
    """:func:`calls_steps` driven on the sync ``client``."""
    return drive(calls_steps(calls, errors, duplicates), client)


def calls_steps(
    calls: Sequence[ScriptCall],
    errors: list[tuple[ScriptCall, Exception]] | None = None,
    duplicates: list[ScriptCall] | None = None,
) -> Steps[list[Any]]:
    """Send ``calls`` (one round trip however many), then the steps of their follow-ups.

    Every follow-up runs even when an earlier one raises, and every call runs even when Redis
    refuses another (see :func:`refuses_only_this_write`); the result of a failed call is
    ``None``. The errors are appended to ``errors`` when it is given (a ``DRM_REFUSED`` reply as
    :class:`~.scripts.MetricsRefused`, a ``ValueError``); otherwise the first one is raised once
    all follow-ups ran. Any other error reply is raised at once. An idempotent call that was
    already applied has the result ``None``, skips its follow-up, and is appended to
    ``duplicates`` when given.
    """
    if len(calls) == 1:
        try:
            replies: list[Any] = [(yield calls[0])]
        except MetricsRefused as exc:
            replies = [exc]
        except ResponseError as exc:
            if not refuses_only_this_write(exc):
                raise
            replies = [exc]
    else:
        replies = yield from _pipelined(calls)
    results: list[Any] = []
    failed: list[tuple[ScriptCall, Exception]] = [] if errors is None else errors
    for call, reply in zip(calls, replies, strict=True):
        if isinstance(reply, ResponseError | MetricsRefused):
            failed.append((call, as_refusal(reply)))
            results.append(None)
        elif call.idempotent and is_duplicate(reply):
            results.append(None)
            if duplicates is not None:
                duplicates.append(call)
        elif call.then is None:
            results.append(reply)
        else:
            try:
                results.append((yield from call.then(reply)))
            except Exception as exc:
                failed.append((call, exc))
                results.append(None)
    if errors is None and failed:
        raise failed[0][1]
    return results


#: Error codes of replies that concern one call only: a key holding another type (Redis's own
#: code) and our write scripts' refusals.
ONE_CALL_CODES = frozenset({"WRONGTYPE", REFUSED})


def refuses_only_this_write(error: BaseException) -> bool:
    """Whether an error reply refuses this one call only, not every write: a server that is
    read-only, out of memory, loading, busy or misconfigured (``MISCONF``) fails every call."""
    if isinstance(error, MetricsRefused):
        return True
    if type(error) is not ResponseError:
        return False
    # A runtime error inside a script (a bug, or a foreign key in that one call): not an outage.
    return error_code(error) in ONE_CALL_CODES or is_script_error(error)


#: Errors that mean "Redis cannot be reached now": the batch is kept and sent again. A bare
#: ``ClusterError`` is redis-py giving up on a cluster whose nodes keep redirecting it
#: (``"TTL exhausted."``: a map not settled yet, during a failover or a resharding).
UNREACHABLE: tuple[type[Exception], ...] = (
    ConnectionError,
    TimeoutError,
    InvalidResponse,
    RedisClusterException,
    ClusterError,
    OSError,
)
#: Error replies of a server that cannot take writes for now (out of memory, a replica, a
#: cluster failing over, a script cache just emptied by a restart).
PASSING_REPLIES: tuple[type[Exception], ...] = (
    OutOfMemoryError,
    ReadOnlyError,
    ClusterError,
    TryAgainError,
    AskError,
    NoScriptError,
)
#: Codes of passing conditions found in an error's text: those redis-py has no class for, the
#: others as Redis 6.2 words them inside a script (which hides the class), and an idempotent
#: call waiting for an earlier one of its batch.
PASSING_CODES = frozenset(
    {"MISCONF", "BUSY", "MASTERDOWN", "NOREPLICAS", "LOADING", "OOM", "READONLY", "CLUSTERDOWN"}
    | {"TRYAGAIN", OUT_OF_ORDER}
)


def is_outage(error: BaseException) -> bool:
    """Whether ``error`` is a passing failure of Redis as a whole (retry later), rather than a
    refusal that sending the same batch again would meet again."""
    if isinstance(error, ResponseError):
        return isinstance(error, PASSING_REPLIES) or error_code(error) in PASSING_CODES
    return isinstance(error, UNREACHABLE)


def _pipelined(calls: Sequence[ScriptCall]) -> Steps[list[Any]]:
    pending = list(range(len(calls)))
    replies: list[Any] = [None] * len(calls)
    for attempt in range(2):
        answers = yield Pipe([calls[index] for index in pending], raise_on_error=False)
        missing = absorb_answers(pending, answers, replies, attempt)
        if not missing:
            break
        for script in scripts_of(calls, missing):
            yield Op("script_load", script.source)
        pending = missing
    return replies


def absorb_answers(
    pending: Sequence[int], answers: Sequence[Any], replies: list[Any], attempt: int
) -> list[int]:
    """Store the pipeline's ``answers`` to the ``pending`` calls in ``replies``; return those
    to send again (NOSCRIPT at the first attempt). An outage's error is raised."""
    missing = []
    for index, answer in zip(pending, answers, strict=True):
        if isinstance(answer, NoScriptError) and attempt == 0:
            missing.append(index)
        elif isinstance(answer, Exception) and not refuses_only_this_write(answer):
            raise answer
        else:
            replies[index] = answer
    return missing


def scripts_of(calls: Sequence[ScriptCall], indexes: Sequence[int]) -> list[LuaScript]:
    """The distinct scripts of some calls, to load."""
    return list({calls[index].script.sha: calls[index].script for index in indexes}.values())


@dataclass
class FoldedCall(ScriptCall):
    """One call carrying several writes queued one after another on a :class:`Batch` (a
    counter's increments: one script call in its general form rather than one per increment,
    most of which open a slice). It is all or nothing: refused as a whole, its writes are sent
    again one by one (each atomic), so a refusal still refuses only the write it concerns."""

    #: How many writes it carries (one result each).
    writes: int = 1
    #: Its writes as calls of their own, made only when the folded call is refused.
    one_by_one: Callable[[], list[ScriptCall]] = list


class OpenRun(Protocol):
    """The last writes queued on a :class:`Batch`, which the writes queued right after them may
    still join (a counter's increments, ``counter/plan.py``): one call once closed."""

    def close(self) -> ScriptCall: ...


@dataclass
class Batch:
    """Collects writes from any metrics and sends them together in one round trip.

    Each write stays atomic on its own; the batch as a whole is not a transaction (its writes
    may live on different cluster nodes), so one failing write does not undo the others.

    >>> with Batch() as batch:
    ...     hits.incr(batch=batch)
    ...     active.mark(42, batch=batch)
    """

    client: RedisClient | None = None
    results: list[Any] = field(default_factory=list)
    #: Set once the round trip succeeded: the writes are stored (bar those refused, or whose
    #: follow-ups raised: they are in ``errors``).
    sent: bool = False
    errors: list[tuple[ScriptCall, Exception]] = field(default_factory=list)
    #: Idempotent calls the last round trip found already applied (their reply had been lost).
    duplicates: list[ScriptCall] = field(default_factory=list)
    #: Whether writes may join the run queued before them (:meth:`open`). The sender's batches
    #: do not: each of their calls is numbered and sent again alone after an outage.
    joins: bool = True
    #: The writes queued last, still open to the next ones (closed by reading :attr:`calls`).
    open_run: OpenRun | None = None
    _queued: list[ScriptCall] = field(default_factory=list)

    @property
    def calls(self) -> list[ScriptCall]:
        """The queued calls, the open run closed into its call first."""
        self._close_run()
        return self._queued

    def add(self, call: ScriptCall) -> None:
        self.calls.append(call)

    def open(self, run: OpenRun) -> None:
        """Queue ``run`` as the last writes, open to the next ones (the run before it closed)."""
        self._close_run()
        self.open_run = run

    def _close_run(self) -> None:
        if self.open_run is not None:
            self._queued.append(self.open_run.close())
            self.open_run = None

    def execute(self) -> list[Any]:
        """Send the queued writes in one round trip and run every follow-up; the first error (if
        any) is raised once all of them ran, the others are in ``errors``."""
        calls = self.calls
        if not calls:
            return []
        client = self.client or get_redis_connection()
        self._queued = []
        self.errors = []
        self.duplicates = []
        replies = run_calls(client, calls, self.errors, self.duplicates)
        self.results = []
        for call, result in zip(calls, replies, strict=True):
            if not isinstance(call, FoldedCall):
                self.results.append(result)
                continue
            refused = next((i for i, (c, _) in enumerate(self.errors) if c is call), None)
            if refused is None:
                self.results += [result] * call.writes  # one result per write queued
                continue
            del self.errors[refused]  # nothing of it was written: its writes one by one
            self.results += run_calls(client, call.one_by_one(), self.errors, self.duplicates)
        self.sent = True
        if self.errors:
            raise self.errors[0][1]
        return self.results

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.execute()
