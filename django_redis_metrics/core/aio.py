"""The async API's clients: a ``redis.asyncio`` client per event loop (``core/drive.py``'s
``adrive`` runs steps on it).

A ``redis.asyncio`` connection belongs to the loop that opened it, so each running loop gets its
own client (and pool), built from the same settings as the sync client
(:mod:`.connection`): ``CONNECTION`` (a URL or a ``CACHES`` alias, whose connection options are
reused), ``CLUSTER`` and the socket timeouts. Nothing here blocks the loop or starts a thread:
every request is awaited on the loop's own connections.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import weakref
from types import TracebackType
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.connection
from django.core.exceptions import ImproperlyConfigured
from redis.asyncio import connection as aconnection

from ..conf import conf
from ..exceptions import AsyncPoolTimeout
from . import sentinel
from .connection import AsyncRedisClient, _cache_alias_client, is_url

#: Each running loop's clients, keyed by (target, cluster, timeouts); a loop that is closed or
#: collected takes its clients with it.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = (
    weakref.WeakKeyDictionary()
)
_lock = threading.Lock()
#: Each client's gate: as many permits as its pool has connections, so an await beyond them
#: waits for one to be free instead of redis-py raising ``MaxConnectionsError``.
_gates: weakref.WeakKeyDictionary[Any, asyncio.Semaphore] = weakref.WeakKeyDictionary()
_openers: weakref.WeakKeyDictionary[Any, asyncio.Lock] = weakref.WeakKeyDictionary()
#: Clients whose first exchange is over. Until then exchanges take turns: redis-py's async
#: cluster client, initialised by many exchanges at once, closes connections others are using
#: (a few of 1,000 concurrent first awaits failed with AttributeError or ConnectionError).
_opened: weakref.WeakSet[Any] = weakref.WeakSet()
#: Whether this task already holds a permit (a nested exchange must not wait for another).
_holding: contextvars.ContextVar[bool] = contextvars.ContextVar("drm_holding", default=False)


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
        int(current["ASYNC_MAX_CONNECTIONS"]),
    )
    with _lock:
        for stale in [other for other in _clients if other.is_closed()]:
            del _clients[stale]  # its connections died with it; aclose() needs a running loop
        clients = _clients.setdefault(loop, {})
        client: AsyncRedisClient | None = clients.get(options)
        if client is None:
            client = clients[options] = _new_async_client(*options)
            _gates[client] = asyncio.Semaphore(options[-1])
            _openers[client] = asyncio.Lock()
    return client


class ConnectionSlot:
    """``async with ConnectionSlot(client):`` around one exchange with Redis: waits (at most
    ``ASYNC_POOL_TIMEOUT``) until fewer exchanges than the pool's connections are under way on
    ``client``, then holds one permit. A task already holding one (a nested exchange) enters
    at once. Clients made elsewhere than :func:`get_async_connection` have no gate."""

    def __init__(self, client: AsyncRedisClient) -> None:
        self.client = client
        self.gate = None if _holding.get() else _gates.get(client)
        self.opener: asyncio.Lock | None = None
        self.token: contextvars.Token[bool] | None = None

    async def __aenter__(self) -> None:
        if self.gate is None:
            return
        wait = float(conf.ASYNC_POOL_TIMEOUT)
        try:
            async with asyncio.timeout(wait):
                await self.gate.acquire()
                if self.client not in _opened:
                    await self._take_turn(self.gate)
        except TimeoutError:
            raise AsyncPoolTimeout(
                f"All {conf.ASYNC_MAX_CONNECTIONS} connections of this event loop's Redis "
                f"client stayed busy for {wait:g} s (ASYNC_MAX_CONNECTIONS, "
                "ASYNC_POOL_TIMEOUT): Redis answers more slowly than the awaits arrive."
            ) from None
        self.token = _holding.set(True)

    async def _take_turn(self, gate: asyncio.Semaphore) -> None:
        """Wait for the client's first exchange to end; be it, if none has succeeded yet."""
        opener = _openers[self.client]
        try:
            await opener.acquire()
        except BaseException:
            gate.release()
            raise
        if self.client in _opened:
            opener.release()
        else:
            self.opener = opener  # released on leaving, once this exchange is over

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self.opener is not None:
            if kind is None or kind is StopIteration:
                _opened.add(self.client)
            self.opener.release()
        if self.gate is not None and self.token is not None:
            _holding.reset(self.token)
            self.gate.release()


async def aclose_connections() -> None:
    """Close and forget the running loop's clients (tests, and a loop about to end)."""
    with _lock:
        clients = list(_clients.pop(asyncio.get_running_loop(), {}).values())
    for client in clients:
        await client.aclose()
        await sentinel.aclose_sentinels(client)


def _new_async_client(
    target: str, cluster: bool, timeout: float, connect_timeout: float, max_connections: int
) -> AsyncRedisClient:
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": connect_timeout,
        "health_check_interval": 30,
        "max_connections": max_connections,  # per node on a cluster
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
    # from_pool: the client owns the pool, so closing the client closes its connections.
    return redis.asyncio.Redis.from_pool(
        redis.asyncio.ConnectionPool(connection_class=connection_class, **{**kwargs, **options})
    )
