"""The async API's side of Redis: a ``redis.asyncio`` client per event loop, and the async twins
of the script calls, of ``run_calls`` and of :func:`~.steps.drive`.

A ``redis.asyncio`` connection belongs to the loop that opened it, so each running loop gets its
own client (and pool), built from the same settings as the sync client
(:mod:`.connection`): ``CONNECTION`` (a URL or a ``CACHES`` alias, whose connection options are
reused), ``CLUSTER`` and the socket timeouts. Nothing here blocks the loop or starts a thread:
every request is awaited on the loop's own connections.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Iterator, Sequence
from typing import Any, TypeVar

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.connection
from django.core.exceptions import ImproperlyConfigured
from redis.asyncio import connection as aconnection
from redis.exceptions import NoScriptError, ResponseError

from ..conf import conf
from . import sentinel
from .base import Metric
from .batch import (
    ScriptCall,
    absorb_answers,
    needs_follow_up,
    refuses_only_this_write,
    scripts_of,
    settle,
)
from .catalogue import inline_catalogue, listing_steps
from .connection import AsyncRedisClient, _cache_alias_client, is_url
from .scripts import KeyOrArg, LuaScript, MetricsRefused, as_refusal
from .steps import Calls, Op, Script, Steps, finish

T = TypeVar("T")

#: Each running loop's clients, keyed by (target, cluster, timeouts); a loop that is closed or
#: collected takes its clients with it.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()


def get_async_connection() -> AsyncRedisClient:
    """The running loop's client for the current settings; made on first use in each loop
    (without any I/O: it connects on its first command)."""
    loop = asyncio.get_running_loop()
    current = conf.current()
    target = str(current["CONNECTION"])
    options = (
        target,
        bool(current["CLUSTER"]),
        float(current["SOCKET_TIMEOUT"]),
        float(current["SOCKET_CONNECT_TIMEOUT"]),
    )
    with _lock:
        for stale in [other for other in _clients if other.is_closed()]:
            del _clients[stale]  # its connections died with it; aclose() needs a running loop
        clients = _clients.setdefault(loop, {})
        client: AsyncRedisClient | None = clients.get(options)
        if client is None:
            client = clients[options] = _new_async_client(*options)
    return client


async def aclose_connections() -> None:
    """Close and forget the running loop's clients (tests, and a loop about to end)."""
    with _lock:
        clients = list(_clients.pop(asyncio.get_running_loop(), {}).values())
    for client in clients:
        await client.aclose()


def _new_async_client(
    target: str, cluster: bool, timeout: float, connect_timeout: float
) -> AsyncRedisClient:
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": connect_timeout,
        "health_check_interval": 30,
    }
    if not is_url(target):
        return _alias_client(target, options)
    if cluster:
        if not target.startswith(("redis://", "rediss://")):
            raise ImproperlyConfigured(
                "With CLUSTER = True, CONNECTION is the redis:// or rediss:// URL of a node."
            )
        return redis.asyncio.cluster.RedisCluster.from_url(target, **options)
    if sentinel.is_sentinel_url(target):
        return sentinel.async_client(target, {**options, "retry_on_timeout": False})
    return redis.asyncio.Redis.from_url(target, retry_on_timeout=False, **options)


#: The async connection class of each sync one a ``CACHES`` alias's pool may use.
_ASYNC_CONNECTIONS: dict[type[Any], type[aconnection.AbstractConnection]] = {
    redis.connection.SSLConnection: aconnection.SSLConnection,
    redis.connection.UnixDomainSocketConnection: aconnection.UnixDomainSocketConnection,
}


#: The connection options of a ``CACHES`` alias's pool that the async client takes over:
#: where the server is and how to talk to it, TLS included, not the sync machinery (parser,
#: retry, notifications, OCSP), which ``redis.asyncio`` does not share.
ALIAS_OPTIONS = frozenset(
    {"host", "port", "db", "path", "username", "password", "credential_provider", "client_name"}
    | {"encoding", "encoding_errors", "decode_responses", "protocol"}
    | {"ssl_keyfile", "ssl_certfile", "ssl_cert_reqs", "ssl_ca_certs", "ssl_ca_data"}
    | {"ssl_ca_path", "ssl_check_hostname", "ssl_min_version", "ssl_ciphers", "ssl_password"}
)


def _alias_client(alias: str, options: dict[str, Any]) -> AsyncRedisClient:
    """A client on the server of a ``CACHES`` alias, with its connection options (host, port,
    db, credentials, TLS) and these timeouts, in a pool of this loop's own."""
    shared = _cache_alias_client(alias)
    if not isinstance(shared, redis.Redis):
        raise ImproperlyConfigured(
            f"The async API cannot share the Redis Cluster client of the CACHES alias {alias!r}; "
            "set DJANGO_REDIS_METRICS['CONNECTION'] to a node's URL with CLUSTER = True."
        )
    pool = shared.connection_pool
    if sentinel.is_sentinel_pool(pool):
        return sentinel.async_alias_client(pool, options, ALIAS_OPTIONS)
    connection_class = _ASYNC_CONNECTIONS.get(pool.connection_class, aconnection.Connection)
    kwargs = {key: value for key, value in pool.connection_kwargs.items() if key in ALIAS_OPTIONS}
    return redis.asyncio.Redis(
        connection_pool=redis.asyncio.ConnectionPool(
            connection_class=connection_class, **{**kwargs, **options}
        )
    )


async def ascript(
    client: AsyncRedisClient,
    script: LuaScript,
    keys: Sequence[KeyOrArg],
    args: Sequence[KeyOrArg] = (),
) -> Any:
    """``script(client, keys, args)`` on the async client: EVALSHA, EVAL once on NOSCRIPT, a
    ``DRM_REFUSED`` reply raised as :class:`~.scripts.MetricsRefused`."""
    try:
        try:
            return await client.evalsha(script.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await client.eval(script.source, len(keys), *keys, *args)
    except ResponseError as exc:
        refusal = as_refusal(exc)
        if refusal is exc:
            raise
        raise refusal from exc


async def arun_calls(
    client: AsyncRedisClient,
    calls: Sequence[ScriptCall],
    errors: list[tuple[ScriptCall, Exception]] | None = None,
    duplicates: list[ScriptCall] | None = None,
) -> list[Any]:
    """``run_calls`` on the async client: one round trip (one per node on a cluster), the
    same errors, then each call's async follow-up (``ScriptCall.aafter``)."""
    if len(calls) == 1:
        call = calls[0]
        try:
            replies: list[Any] = [await ascript(client, call.script, call.keys, call.args)]
        except MetricsRefused as exc:
            replies = [exc]
        except ResponseError as exc:
            if not refuses_only_this_write(exc):
                raise
            replies = [exc]
    else:
        replies = await _apipelined(client, calls)
    outcomes: list[tuple[bool, Any]] = []
    for call, reply in zip(calls, replies, strict=True):
        if needs_follow_up(call, reply):
            try:
                outcomes.append((True, await _afollow(client, call, reply)))
            except Exception as exc:
                outcomes.append((False, exc))
    ready = iter(outcomes)
    return settle(calls, replies, errors, duplicates, lambda _call, _reply: _unwrap(ready))


async def _afollow(client: AsyncRedisClient, call: ScriptCall, reply: Any) -> Any:
    if call.aafter is None:
        raise TypeError(f"{call.script.name}: a write with a follow-up needs an async one.")
    return await call.aafter(client, reply)


def _unwrap(outcomes: Iterator[tuple[bool, Any]]) -> Any:
    ok, value = next(outcomes)
    if not ok:
        raise value
    return value


async def _apipelined(client: AsyncRedisClient, calls: Sequence[ScriptCall]) -> list[Any]:
    pending = list(range(len(calls)))
    replies: list[Any] = [None] * len(calls)
    for attempt in range(2):
        pipe: Any = client.pipeline(transaction=False)
        for index in pending:
            call = calls[index]
            pipe.execute_command("EVALSHA", call.script.sha, len(call.keys), *call.keys, *call.args)
        answers = await pipe.execute(raise_on_error=False)
        missing = absorb_answers(pending, answers, replies, attempt)
        if not missing:
            break
        for script in scripts_of(calls, missing):
            await client.script_load(script.source)
        pending = missing
    return replies


async def adrive(steps: Steps[T], client: AsyncRedisClient | None = None) -> T:
    """Run ``steps`` (see :mod:`.steps`) on the async ``client`` (default: the running loop's,
    taken once the steps have validated their arguments)."""
    try:
        step = next(steps)
        client = client or get_async_connection()
        while True:
            try:
                reply = await _arun_step(client, step)
            except Exception as exc:
                step = steps.throw(exc)
            else:
                step = steps.send(reply)
    except StopIteration as done:
        result: T = done.value
        return result
    finally:
        finish(steps)


async def _arun_step(client: AsyncRedisClient, step: Any) -> Any:
    if isinstance(step, Op):
        return await getattr(client, step.method)(*step.args, **step.kwargs)
    if isinstance(step, Script):
        return await ascript(client, step.script, step.keys, step.args)
    if isinstance(step, Calls):
        return await arun_calls(client, step.calls)
    pipe: Any = client.pipeline(transaction=False)
    for op in step.ops:
        getattr(pipe, op.method)(*op.args, **op.kwargs)
    return await pipe.execute(raise_on_error=step.raise_on_error)


class AsyncMetric(Metric):
    """What the async twins of every kind share."""

    async def _alisted(self, client: AsyncRedisClient, unlisted: Any) -> None:
        """``Metric._listed`` on the async path: on Redis Cluster, list a metric its write
        reported unlisted."""
        if int(unlisted) and not inline_catalogue(client):
            await adrive(listing_steps(self.KIND, self.name, self.meta_key), client)

    async def aexists(self) -> bool:
        """Whether the metric holds data (its meta hash exists)."""
        return bool(await get_async_connection().exists(self.meta_key))
