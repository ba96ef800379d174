"""Fail open: writes made on behalf of a request never slow it down for long nor break it.

The middleware and the view decorators send their writes through :func:`send`, which

- uses a client of its own with a short timeout (``FAIL_OPEN_TIMEOUT``) and no retries;
- after a failure, opens a circuit breaker: no attempt at all for ``FAIL_OPEN_COOLDOWN``
  seconds, then the next request tries again (and closes the breaker if Redis answers);
- logs one warning when the breaker opens and one line when Redis answers again;
- drops the writes it could not send.

The models' own methods are not affected: called directly, they raise.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.exceptions import RedisError
from redis.retry import Retry

from .batch import Batch
from .conf import conf
from .connection import RedisClient, get_redis_connection, is_url

logger = logging.getLogger("django_redis_metrics")

_clients: dict[tuple[Any, ...], RedisClient] = {}
_clients_lock = threading.Lock()


class CircuitBreaker:
    """Closed: writes go through. Open: every write is dropped until the cooldown ends."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._open_until: float | None = None
        self._lock = threading.Lock()
        self.dropped = 0

    @property
    def is_open(self) -> bool:
        return self._open_until is not None and self.clock() < self._open_until

    def allow(self) -> bool:
        """Whether a write may be attempted now (counts the writes it refuses)."""
        if self.is_open:
            self.dropped += 1
            return False
        return True

    def failure(self, exc: BaseException) -> None:
        cooldown = conf.FAIL_OPEN_COOLDOWN
        with self._lock:
            already_open = self._open_until is not None
            self._open_until = self.clock() + cooldown
        if not already_open:
            logger.warning(
                "Metrics disabled for %.0f s: Redis at %s failed (%s: %s). "
                "Requests are served without recording metrics.",
                cooldown, _where(), type(exc).__name__, exc,
            )
        else:
            logger.warning(
                "Metrics still disabled for %.0f s: Redis failed again (%s: %s).",
                cooldown, type(exc).__name__, exc,
            )

    def success(self) -> None:
        if self._open_until is None:
            return
        with self._lock:
            was_open, self._open_until = self._open_until is not None, None
            dropped, self.dropped = self.dropped, 0
        if was_open:
            logger.warning(
                "Metrics enabled again: Redis answers (%d writes were dropped).", dropped
            )

    def reset(self) -> None:
        with self._lock:
            self._open_until = None
            self.dropped = 0


#: The process-wide breaker shared by the middleware and the decorators.
breaker = CircuitBreaker()


def redacted(target: str) -> str:
    """A connection URL fit for logs: any credentials replaced by ``***``."""
    if "://" in target and "@" in target:
        scheme, _, rest = target.partition("://")
        target = f"{scheme}://***@{rest.rpartition('@')[2]}"
    return target


def _where() -> str:
    return redacted(conf.CONNECTION)


def fail_open_client() -> RedisClient:
    """A client on the configured Redis with the short ``FAIL_OPEN_TIMEOUT`` and no retries.

    For a ``CACHES`` alias, a pool with the alias's connection options but the short timeout.
    """
    timeout = conf.FAIL_OPEN_TIMEOUT
    target = conf.CONNECTION
    key = (os.getpid(), target, conf.CLUSTER, timeout)
    client = _clients.get(key)
    if client is None:
        with _clients_lock:
            client = _clients.get(key)
            if client is None:
                client = _clients[key] = _new_client(target, timeout)
    return client


def _new_client(target: str, timeout: float) -> RedisClient:
    options: dict[str, Any] = {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "health_check_interval": 30,
    }
    if is_url(target):
        if conf.CLUSTER:
            return RedisCluster.from_url(target, **options)
        return redis.Redis.from_url(target, retry=Retry(NoBackoff(), 0), **options)
    shared = get_redis_connection()
    if not isinstance(shared, redis.Redis):
        return shared
    pool = shared.connection_pool
    kwargs = {**pool.connection_kwargs, **options, "retry": Retry(NoBackoff(), 0)}
    new_pool = pool.__class__(connection_class=pool.connection_class, **kwargs)
    return redis.Redis(connection_pool=new_pool)


def reset_clients() -> None:
    """Forget the fail-open clients and close the breaker; for tests."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()
    breaker.reset()


def send(batch: Batch) -> bool:
    """Send ``batch`` in one round trip unless the breaker is open; never raises.

    Returns whether the writes were stored.
    """
    if not batch.calls:
        return True
    if not breaker.allow():
        batch.calls.clear()
        return False
    try:
        batch.client = fail_open_client()
        batch.execute()
    except (RedisError, OSError) as exc:
        batch.calls.clear()
        breaker.failure(exc)
        return False
    except Exception:
        batch.calls.clear()
        logger.exception("Dropped metrics writes after an unexpected error.")
        return False
    breaker.success()
    return True
