"""Run model writes (Lua script calls) one at a time or many in a single pipelined round trip.

Every write a model makes is a :class:`ScriptCall`. ``run_calls`` sends one call as one EVALSHA, or
many as one non-transactional pipeline; scripts the server has not cached yet (NOSCRIPT) are
loaded and only those calls re-sent, which is safe because a NOSCRIPT call never ran.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
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
from .scripts import (
    OUT_OF_ORDER,
    REFUSED,
    KeyOrArg,
    LuaScript,
    MetricsRefused,
    as_refusal,
    error_code,
    is_duplicate,
    is_script_error,
    once_key,
)

AfterCallback = Callable[[RedisClient, Any], Any]
AsyncAfterCallback = Callable[[Any, Any], Awaitable[Any]]


@dataclass
class ScriptCall:
    """One atomic script call, and what to do with its reply (e.g. a cluster follow-up)."""

    script: LuaScript
    keys: Sequence[KeyOrArg]
    args: Sequence[KeyOrArg]
    after: AfterCallback | None = None
    #: Made by :meth:`once`: a reply of :data:`~.scripts.DUPLICATE` means "already applied".
    idempotent: bool = False
    #: The follow-up on the async path (``core.aio.arun_calls``), when ``after`` needs Redis.
    aafter: AsyncAfterCallback | None = None

    def once(self, sender: str, seq: int, previous: int = 0) -> ScriptCall:
        """This call through its script's idempotent variant, numbered ``seq`` by ``sender``:
        sent again, it is not applied again (and its ``after`` callback is skipped).
        ``previous``: the number of the call before it in its batch on the same metric (same
        :meth:`once_key`), which must be applied first; 0 if none."""
        return ScriptCall(
            self.script.idempotent(),
            [*self.keys, self.once_key()],
            [*self.args, sender, seq, previous],
            self.after,
            idempotent=True,
        )

    def once_key(self) -> str:
        """The hash remembering which of this metric's calls were applied."""
        return once_key(str(self.keys[0]))


def run_calls(
    client: RedisClient,
    calls: Sequence[ScriptCall],
    errors: list[tuple[ScriptCall, Exception]] | None = None,
    duplicates: list[ScriptCall] | None = None,
) -> list[Any]:
    """Run ``calls`` (one round trip however many), then their ``after`` callbacks.

    Every callback runs even when an earlier one raises, and every call runs even when Redis
    refuses another (see :func:`refuses_only_this_write`); the result of a failed call is
    ``None``. The errors are appended to ``errors`` when it is given (a ``DRM_REFUSED`` reply as
    :class:`~.scripts.MetricsRefused`, a ``ValueError``); otherwise the first one is raised once
    all callbacks ran. Any other error reply is raised at once. An idempotent call that was
    already applied has the result ``None``, skips its callback, and is appended to
    ``duplicates`` when given.
    """
    if len(calls) == 1:
        call = calls[0]
        try:
            replies = [call.script(client, call.keys, call.args)]
        except MetricsRefused as exc:
            replies = [exc]
        except ResponseError as exc:
            if not refuses_only_this_write(exc):
                raise
            replies = [exc]
    else:
        replies = _pipelined(client, calls)
    return settle(
        calls, replies, errors, duplicates, lambda call, reply: _after(client, call, reply)
    )


def _after(client: RedisClient, call: ScriptCall, reply: Any) -> Any:
    return reply if call.after is None else call.after(client, reply)


def settle(
    calls: Sequence[ScriptCall],
    replies: Sequence[Any],
    errors: list[tuple[ScriptCall, Exception]] | None,
    duplicates: list[ScriptCall] | None,
    follow: Callable[[ScriptCall, Any], Any],
) -> list[Any]:
    """The results of ``calls`` from their ``replies``, as :func:`run_calls` documents:
    ``follow(call, reply)`` runs each call's follow-up (a reply that is an error or a duplicate
    has none)."""
    results: list[Any] = []
    failed: list[tuple[ScriptCall, Exception]] = [] if errors is None else errors
    for call, reply in zip(calls, replies, strict=True):
        if isinstance(reply, ResponseError | MetricsRefused):
            failed.append((call, as_refusal(reply)))
            results.append(None)
            continue
        if call.idempotent and is_duplicate(reply):
            results.append(None)
            if duplicates is not None:
                duplicates.append(call)
            continue
        if not has_follow_up(call):
            results.append(reply)
            continue
        try:
            results.append(follow(call, reply))
        except Exception as exc:
            failed.append((call, exc))
            results.append(None)
    if errors is None and failed:
        raise failed[0][1]
    return results


def has_follow_up(call: ScriptCall) -> bool:
    return call.after is not None or call.aafter is not None


def needs_follow_up(call: ScriptCall, reply: Any) -> bool:
    """Whether :func:`settle` runs ``call``'s follow-up for ``reply``."""
    if isinstance(reply, ResponseError | MetricsRefused):
        return False
    return has_follow_up(call) and not (call.idempotent and is_duplicate(reply))


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


#: Errors that mean "Redis cannot be reached now": the batch is kept and sent again.
UNREACHABLE: tuple[type[Exception], ...] = (
    ConnectionError,
    TimeoutError,
    InvalidResponse,
    RedisClusterException,
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


def _pipelined(client: RedisClient, calls: Sequence[ScriptCall]) -> list[Any]:
    pending = list(range(len(calls)))
    replies: list[Any] = [None] * len(calls)
    for attempt in range(2):
        if isinstance(client, redis.Redis) and client.connection is None:
            answers = _send_direct(client, [calls[index] for index in pending])
        else:
            pipe = client.pipeline(transaction=False)
            for index in pending:
                calls[index].script.queue(pipe, calls[index].keys, calls[index].args)
            answers = pipe.execute(raise_on_error=False)
        missing = absorb_answers(pending, answers, replies, attempt)
        if not missing:
            break
        for script in scripts_of(calls, missing):
            script.ensure_loaded(client)
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


def read_with_scripts(
    client: RedisClient, fill: Callable[[Any], None], scripts: Sequence[LuaScript]
) -> list[Any]:
    """Run the read-only pipeline that ``fill(pipe)`` queues; if the server lacks one of
    ``scripts`` (NOSCRIPT), load them and run it once more. Replies that are errors come back
    as exceptions in the list."""
    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        fill(pipe)
        replies: list[Any] = pipe.execute(raise_on_error=False)
        if attempt or not any(isinstance(reply, NoScriptError) for reply in replies):
            break
        for script in scripts:
            script.ensure_loaded(client)
    return replies


def _send_direct(client: redis.Redis, calls: Sequence[ScriptCall]) -> list[Any]:
    """What ``pipeline(transaction=False).execute(raise_on_error=False)`` does on one server,
    retries included, without its per-command bookkeeping (this is the sender thread's hot
    path): one packed write, every reply read (error replies as exceptions) so the pooled
    socket stays in step."""
    commands = [
        ("EVALSHA", call.script.sha, len(call.keys), *call.keys, *call.args) for call in calls
    ]
    pool = client.connection_pool
    connection: Any = pool.get_connection()  # redis-py leaves these methods untyped

    def attempt() -> list[Any]:
        connection.send_packed_command(connection.pack_commands(commands))
        answers: list[Any] = []
        for _command in commands:
            try:
                answers.append(connection.read_response())
            except ResponseError as exc:
                answers.append(exc)
        return answers

    try:
        answers: list[Any] = connection.retry.call_with_retry(
            attempt, lambda _error: connection.disconnect()
        )
        return answers
    except BaseException:
        connection.disconnect()  # replies may be left unread: never reuse this socket as is
        raise
    finally:
        pool.release(connection)


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
    calls: list[ScriptCall] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)
    #: Set once the round trip succeeded: the writes are stored (bar those refused, whose
    #: ``after`` callbacks raised: they are in ``errors``).
    sent: bool = False
    errors: list[tuple[ScriptCall, Exception]] = field(default_factory=list)
    #: Idempotent calls the last round trip found already applied (their reply had been lost).
    duplicates: list[ScriptCall] = field(default_factory=list)

    def add(self, call: ScriptCall) -> None:
        self.calls.append(call)

    def execute(self) -> list[Any]:
        """Send the queued writes in one round trip and run every ``after`` callback; the first
        callback error (if any) is raised once all of them ran, the others are in ``errors``."""
        if not self.calls:
            return []
        client = self.client or get_redis_connection()
        calls, self.calls = self.calls, []
        self.errors = []
        self.duplicates = []
        self.results = run_calls(client, calls, self.errors, self.duplicates)
        self.sent = True
        if self.errors:
            raise self.errors[0][1]
        return self.results

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:
            self.execute()
