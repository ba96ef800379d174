"""The three drivers of steps (``core/steps.py``): ``drive`` runs one generator on the sync
client, ``adrive`` on the running loop's async client, and ``gather`` runs many in one shared
pipeline per round trip (the Prometheus exposition, the admin's list of gauges).

A driver knows how to send the primitive steps (:class:`~.steps.Op`, :class:`~.steps.Pipe`,
:class:`~.steps.Script`) and nothing else: what to send, and what the replies mean, is the
generator's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import redis
from redis.exceptions import ResponseError

from .aio import ConnectionSlot, get_async_connection
from .connection import AsyncRedisClient, RedisClient, get_redis_connection
from .gather import gather_steps
from .steps import Op, Pipe, Script, ScriptCall, Step, Steps, finish

T = TypeVar("T")


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


def run_step(client: RedisClient, step: Step) -> Any:
    """One step on the sync client."""
    if isinstance(step, Script):  # a write's ScriptCall too: the hot path first
        return step.script(client, step.keys, step.args)
    if isinstance(step, Op):
        return getattr(client, step.method)(*step.args, **step.kwargs)
    if isinstance(client, redis.Redis) and client.connection is None:
        if _writes_only(step):
            return _send_direct(client, step.ops)  # type: ignore[arg-type]
        if _plain_reads(step):
            return _read_direct(client, step.ops, step.raise_on_error)  # type: ignore[arg-type]
    pipe = client.pipeline(transaction=False)
    _queue(pipe, step.ops)
    return pipe.execute(raise_on_error=step.raise_on_error)


async def adrive(steps: Steps[T], client: AsyncRedisClient | None = None) -> T:
    """Run ``steps`` on the async ``client`` (default: the running loop's, taken once the
    steps have validated their arguments)."""
    try:
        step = next(steps)
        client = client or get_async_connection()
        async with ConnectionSlot(client):
            while True:
                try:
                    reply = await _send_async(client, step)
                except Exception as exc:
                    step = steps.throw(exc)
                else:
                    step = steps.send(reply)
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        finish(steps)


async def _send_async(client: AsyncRedisClient, step: Step) -> Any:
    if isinstance(step, Script):
        return await adrive(step.steps(), client)
    if isinstance(step, Op):
        return await getattr(client, step.method)(*step.args, **step.kwargs)
    pipe: Any = client.pipeline(transaction=False)
    _queue(pipe, step.ops)
    return await pipe.execute(raise_on_error=step.raise_on_error)


def gather(many: Sequence[Steps[Any]], client: RedisClient | None = None) -> list[Any]:
    """Run ``many`` generators together, their requests of each round in one shared pipeline
    (``core/gather.py``): each one's result, or the exception it raised, in order."""
    return drive(gather_steps(many), client)


def _queue(pipe: Any, ops: Sequence[Op | Script]) -> None:
    for op in ops:
        if isinstance(op, Script):
            op.script.queue(pipe, op.keys, op.args)
        elif op.method == "unlink" and not op.kwargs:
            # redis-py's async ClusterPipeline.unlink is a coroutine (never queued): the
            # command itself is queued the same way on every pipeline.
            pipe.execute_command("UNLINK", *op.args)
        else:
            getattr(pipe, op.method)(*op.args, **op.kwargs)


def _writes_only(step: Pipe) -> bool:
    """Whether ``step`` is a batch of writes (``core.batch.calls_steps``'s pipeline)."""
    return not step.raise_on_error and all(isinstance(op, ScriptCall) for op in step.ops)


def _send_direct(client: redis.Redis, calls: Sequence[ScriptCall]) -> list[Any]:
    """What ``pipeline(transaction=False).execute(raise_on_error=False)`` does on one server
    for a batch of writes, retries included, without its per-command bookkeeping (this is the sender
    thread's hot path): one packed write, every reply read (error replies as exceptions) so the
    pooled socket stays in step."""
    commands = [
        ("EVALSHA", call.script.sha, len(call.keys), *call.keys, *call.args) for call in calls
    ]
    return _on_pooled_connection(client, commands, lambda connection, _: connection.read_response())


def on_one_connection(client: RedisClient, commands: Sequence[tuple[Any, ...]]) -> list[Any]:
    """``commands`` in one packed request on one pooled connection, each reply parsed as the
    client parses it (an error reply kept as its exception): for commands whose meaning
    depends on the connection, such as ``WAIT`` after a write. Single node (or Sentinel)
    only: a ``TypeError`` for a cluster client."""
    if not isinstance(client, redis.Redis):
        raise TypeError("Commands on one connection need a single-node or Sentinel client.")
    return _on_pooled_connection(client, commands, client.parse_response)


def _on_pooled_connection(
    client: redis.Redis, commands: Sequence[tuple[Any, ...]], read: Callable[[Any, str], Any]
) -> list[Any]:
    """``commands`` sent as one packed request on a pooled connection, each reply read by
    ``read(connection, command name)`` (an error reply kept as its exception), retried as the
    client retries; a socket that may hold unread replies is never reused."""
    pool = client.connection_pool
    connection: Any = pool.get_connection()  # redis-py leaves these methods untyped

    def attempt() -> list[Any]:
        connection.send_packed_command(connection.pack_commands(commands))
        answers: list[Any] = []
        for command in commands:
            try:
                answers.append(read(connection, command[0]))
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


#: Reads a pipeline sends straight to a pooled connection when they are all it holds: commands
#: with no options, whose replies the client parses by command name alone (a counter's read and
#: the listing of its labelled series, ``labels/aggregate.py``).
DIRECT_READS = {"hgetall": "HGETALL", "hget": "HGET", "zrangebylex": "ZRANGEBYLEX"}


def _plain_reads(step: Pipe) -> bool:
    return all(type(op) is Op and not op.kwargs and op.method in DIRECT_READS for op in step.ops)


def _read_direct(client: redis.Redis, ops: Sequence[Op], raise_on_error: bool) -> list[Any]:
    """What ``pipeline(transaction=False).execute(raise_on_error)`` answers for plain reads on
    one server, retries included, without a ``Pipeline``'s per-command bookkeeping (a read of a
    counter costs its caller about a third less): one packed request, every reply read and
    parsed as the client parses it (error replies as exceptions, the first raised if asked)."""
    answers = on_one_connection(client, [(DIRECT_READS[op.method], *op.args) for op in ops])
    if raise_on_error:
        for answer in answers:
            if isinstance(answer, ResponseError):
                raise answer
    return answers
