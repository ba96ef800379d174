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
import threading
import weakref
from typing import Any

import redis
import redis.asyncio
import redis.asyncio.cluster
import redis.connection
from django.core.exceptions import ImproperlyConfigured
from redis.asyncio import connection as aconnection

from ..conf import conf
from . import sentinel
from .connection import AsyncRedisClient, _cache_alias_client, is_url

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
