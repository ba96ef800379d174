"""One Redis client (and so one connection pool) per process and per configuration.

``CONNECTION`` is either a Redis URL (``redis://``, ``rediss://``, ``unix://``, or
``redis+sentinel://`` for a Sentinel-managed master: :mod:`.sentinel`) or the name of a ``CACHES``
alias served by django-redis (its Sentinel client included) or Django's own ``RedisCache``, whose
pool is then shared. With ``CLUSTER = True`` the URL names any node of a Redis Cluster.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import threading
from collections.abc import Iterator
from typing import Any, TypeAlias

import redis
import redis.asyncio
import redis.asyncio.cluster
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import setting_changed
from django.dispatch import receiver
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import NoPermissionError, RedisClusterException, RedisError, ResponseError
from redis.retry import Retry

from ..conf import DEFAULTS, SETTING_NAME, conf
from ..exceptions import MissingPermission
from . import sentinel

RedisClient: TypeAlias = "redis.Redis | RedisCluster"
#: The ``redis.asyncio`` clients of ``core.aio``.
AsyncRedisClient: TypeAlias = "redis.asyncio.Redis | redis.asyncio.cluster.RedisCluster"
#: Either kind, where only the client's type matters (a cluster or not).
AnyRedisClient: TypeAlias = "RedisClient | AsyncRedisClient"

URL_SCHEMES = ("redis://", "rediss://", "unix://", sentinel.SCHEME)

#: Every error that means "Redis could not be reached or answered badly". redis-py raises
#: ``RedisClusterException`` (not a ``RedisError``) when no node of a cluster answers while the
#: ``RedisCluster`` is being built, and socket errors can escape as ``OSError``.
REDIS_ERRORS: tuple[type[Exception], ...] = (RedisError, RedisClusterException, OSError)

#: The ACL rules (besides ``~<PREFIX>:*``) a Redis user needs for every feature of the app on one
#: server: plain reads and writes, the scripts, ``TIME`` (which the scripts call), transactions
#: (the steady writes' and reads' fast paths; without them those go the script's way) and the
#: connection's own commands (``AUTH``, ``HELLO``, ``PING``, ``SELECT``, ``WAIT``), nothing
#: dangerous.
ACL_RULES = (
    "-@all +@read +@write +@connection -@dangerous +evalsha +eval +script|load +time +multi +exec"
)
#: What a Redis Cluster needs besides: the slot map, and RESTORE (a dangerous command) to copy
#: a sparse bitmap to another slot for a query across metrics.
CLUSTER_ACL_RULES = "+cluster|slots +restore"
#: How Redis words a command the ACL denied inside a script (7.0; 6.2 says NOPERM).
SCRIPT_DENIED = "can't run this command or subcommand"


def missing_permission(error: Exception) -> Exception:
    """``error`` as a :class:`MissingPermission` naming the rules the app needs, when it is an
    ACL denial (which Redis 7 words vaguely inside a script); else ``error`` itself."""
    if isinstance(error, MissingPermission) or not isinstance(error, ResponseError):
        return error
    if not isinstance(error, NoPermissionError) and SCRIPT_DENIED not in str(error):
        return error
    denied = MissingPermission(
        f"Redis denied a command or key to the user of DJANGO_REDIS_METRICS['CONNECTION'] "
        f"({error}). Its ACL needs ~{conf.PREFIX}:* {ACL_RULES} (and on Redis Cluster also "
        f"{CLUSTER_ACL_RULES})."
    )
    denied.__cause__ = error
    return denied


#: A password given as a URL option, up to the next option.
PASSWORD_OPTION = re.compile(r"([?&][^=&]*password=)[^&]*", re.IGNORECASE)

#: Every client of this process, keyed by pid and options: one pool each, shared by threads.
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


#: The last ``(setting object, client)`` :func:`get_redis_connection` answered for a URL: every
#: write asks, and working the client out again costs more than the write's own packing.
#: Forgotten when the setting object changes, in a forked child and by ``reset_connections``.
_last_url_client: list[tuple[object, RedisClient]] = []


def _after_fork_in_child() -> None:
    global _lock
    _lock = threading.Lock()  # the parent's may have been held by another thread
    _last_url_client.clear()  # the parent's pool: the child makes its own


os.register_at_fork(after_in_child=_after_fork_in_child)


def is_url(target: str) -> bool:
    return target.startswith(URL_SCHEMES)


def is_cluster(client: object) -> bool:
    return isinstance(client, RedisCluster | redis.asyncio.cluster.RedisCluster)


def get_redis_connection() -> RedisClient:
    """The client for the current settings; created once per process and configuration."""
    override = _override.get()
    if override is not None:
        return override
    raw = conf.raw
    last = _last_url_client
    if last and last[0][0] is raw:
        return last[0][1]
    current = {**DEFAULTS, **raw}  # one read of the setting, not one per key: a hot path
    target = str(current["CONNECTION"])
    if not is_url(target):  # an alias: django-redis and Django say which client, every time
        return _cache_alias_client(target)
    timeouts = (float(current["SOCKET_TIMEOUT"]), float(current["SOCKET_CONNECT_TIMEOUT"]))
    client = _cached((target, bool(current["CLUSTER"]), *timeouts, True))
    _last_url_client[:] = [(raw, client)]
    return client


@receiver(setting_changed)
def _forget_last_url_client(*, setting: str, **kwargs: Any) -> None:
    """A setting object changed in place and announced (``override_settings`` replaces it)."""
    if setting == SETTING_NAME:
        _last_url_client.clear()


def fail_fast_connection() -> RedisClient:
    """A client on the configured Redis with the short ``SENDER["TIMEOUT"]`` and no retries,
    for writes made on behalf of a request. For a ``CACHES`` alias, a pool of its own with the
    alias's connection options but the short timeout. On Redis Cluster it reloads the whole
    slot map at the first ``MOVED`` (see also :func:`refresh_cluster_slots`)."""
    timeout = conf.SENDER.timeout
    return _cached((conf.CONNECTION, conf.CLUSTER, timeout, timeout, False))


def _cached(options: tuple[str, bool, float, float, bool]) -> RedisClient:
    """The process's client for (target, cluster, timeout, connect timeout, retries)."""
    key = (os.getpid(), *options)
    client = _clients.get(key)
    if client is None:
        with _lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = _new_client(*options)
    return client


def _new_client(
    target: str, cluster: bool, timeout: float, connect_timeout: float, retries: bool
) -> RedisClient:
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": connect_timeout,
        "health_check_interval": 30,
    }
    if not retries:
        options["retry"] = Retry(NoBackoff(), 0)
    if not is_url(target):  # a CACHES alias: its pool's options, these timeouts
        shared = _cache_alias_client(target)
        if not isinstance(shared, redis.Redis):
            return shared
        pool = shared.connection_pool
        if sentinel.is_sentinel_pool(pool):  # its own pool on the alias's sentinels
            return sentinel.alias_client(pool, options)
        kwargs = {**pool.connection_kwargs, **options}
        return redis.Redis(
            connection_pool=pool.__class__(connection_class=pool.connection_class, **kwargs)
        )
    if cluster:
        if not target.startswith(("redis://", "rediss://")):
            raise ImproperlyConfigured(
                "With CLUSTER = True, CONNECTION is the redis:// or rediss:// URL of a node."
            )
        if not retries:  # a failover moved slots: learn the new map at once, not in 5 MOVEDs
            options["reinitialize_steps"] = 1
        return RedisCluster.from_url(target, **options)
    if retries:
        options["retry_on_timeout"] = False
    if sentinel.is_sentinel_url(target):
        return sentinel.client(target, options)
    return redis.Redis.from_url(target, **options)


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


def client_for_url(url: str) -> redis.Redis:
    """A new client on a Redis other than the configured one, by its URL (``redis://``,
    ``rediss://``, ``unix://``), with the configured timeouts: ``import_metrics`` reading another
    app's keys. Not cached: the caller closes it."""
    if not url.startswith(URL_SCHEMES[:3]):
        raise ValueError(f"{redacted(url)!r} is not a redis://, rediss:// or unix:// URL.")
    return redis.Redis.from_url(
        url,
        socket_timeout=float(conf.SOCKET_TIMEOUT),
        socket_connect_timeout=float(conf.SOCKET_CONNECT_TIMEOUT),
    )


def refresh_cluster_slots(client: RedisClient) -> None:
    """Reload ``client``'s slot map from any node that answers (the sender's slot watch, once a
    node names a newly promoted master); a no-op for a single node, and silent while no node
    answers."""
    if isinstance(client, RedisCluster):
        with contextlib.suppress(*REDIS_ERRORS):
            client.nodes_manager.initialize()


def reset_connections(*, fail_fast_only: bool = False) -> None:
    """Forget the cached clients (their pools are disconnected): every one, or only those of
    :func:`fail_fast_connection`; for tests."""
    with _lock:
        _last_url_client.clear()
        chosen = [key for key in _clients if not (fail_fast_only and key[-1])]
        clients = [_clients.pop(key) for key in chosen]
    for client in clients:
        client.close()


def redacted(target: str) -> str:
    """A connection URL fit for logs: any credentials replaced by ``***``, those before the
    host and any ``...password=`` option (a Sentinel URL's ``sentinel_password``)."""
    if "://" in target and "@" in target:
        scheme, _, rest = target.partition("://")
        target = f"{scheme}://***@{rest.rpartition('@')[2]}"
    return PASSWORD_OPTION.sub(r"\1***", target)
