"""One Redis client (and so one connection pool) per process and per configuration.

``CONNECTION`` is either a Redis URL (``redis://``, ``rediss://``, ``unix://``) or the name of a
``CACHES`` alias served by django-redis or Django's own ``RedisCache``, whose pool is then shared.
With ``CLUSTER = True`` the URL names any node of a Redis Cluster.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import threading
from collections.abc import Iterator
from typing import Any, TypeAlias

import redis
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException, RedisError

from .conf import conf

RedisClient: TypeAlias = "redis.Redis | RedisCluster"

URL_SCHEMES = ("redis://", "rediss://", "unix://")

#: Every error that means "Redis could not be reached or answered badly". redis-py raises
#: ``RedisClusterException`` (not a ``RedisError``) when no node of a cluster answers while the
#: ``RedisCluster`` is being built, and socket errors can escape as ``OSError``.
REDIS_ERRORS: tuple[type[Exception], ...] = (RedisError, RedisClusterException, OSError)

_clients: dict[tuple[Any, ...], RedisClient] = {}
_lock = threading.Lock()
_override: contextvars.ContextVar[RedisClient | None] = contextvars.ContextVar(
    "django_redis_metrics_client", default=None
)


@contextlib.contextmanager
def using_client(client: RedisClient) -> Iterator[None]:
    """Within the block (this thread or task only), :func:`get_redis_connection` returns
    ``client``: the fail-open sender prepares writes with its short-timeout client."""
    token = _override.set(client)
    try:
        yield
    finally:
        _override.reset(token)


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # the parent's may have been held by another thread


os.register_at_fork(after_in_child=_after_fork_in_child)


def is_url(target: str) -> bool:
    return target.startswith(URL_SCHEMES)


def is_cluster(client: object) -> bool:
    return isinstance(client, RedisCluster)


def get_redis_connection() -> RedisClient:
    """The client for the current settings; created once per process and configuration."""
    override = _override.get()
    if override is not None:
        return override
    target = conf.CONNECTION
    if not is_url(target):
        return _cache_alias_client(target)
    key = (os.getpid(), target, conf.CLUSTER, conf.SOCKET_TIMEOUT, conf.SOCKET_CONNECT_TIMEOUT)
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = _new_client(target)
    return client


def _new_client(url: str) -> RedisClient:
    options: dict[str, Any] = {
        "socket_timeout": conf.SOCKET_TIMEOUT,
        "socket_connect_timeout": conf.SOCKET_CONNECT_TIMEOUT,
        "health_check_interval": 30,
    }
    if conf.CLUSTER:
        if url.startswith("unix://"):
            raise ImproperlyConfigured("Redis Cluster cannot be reached over a unix:// socket.")
        return RedisCluster.from_url(url, **options)
    return redis.Redis.from_url(url, retry_on_timeout=False, **options)


def _cache_alias_client(alias: str) -> RedisClient:
    caches_setting: dict[str, dict[str, Any]] = getattr(settings, "CACHES", {})
    if alias not in caches_setting:
        raise ImproperlyConfigured(
            f"DJANGO_REDIS_METRICS['CONNECTION'] = {alias!r} is neither a Redis URL nor a CACHES "
            f"alias (known aliases: {', '.join(sorted(caches_setting)) or 'none'})."
        )
    backend = str(caches_setting[alias].get("BACKEND", ""))
    if backend.startswith("django_redis."):
        from django_redis import get_redis_connection as django_redis_connection

        client: RedisClient = django_redis_connection(alias, write=True)
        return client
    if backend == "django.core.cache.backends.redis.RedisCache":
        from django.core.cache import caches

        # Django's RedisCache keeps one pool per server in its (private) client object.
        return caches[alias]._cache.get_client(write=True)  # type: ignore[attr-defined,no-any-return]
    raise ImproperlyConfigured(
        f"The CACHES alias {alias!r} uses {backend!r}; only django-redis and Django's RedisCache "
        "expose a Redis connection to share."
    )


def reset_connections() -> None:
    """Forget every cached client (their pools are disconnected); for tests and after fork."""
    with _lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()
