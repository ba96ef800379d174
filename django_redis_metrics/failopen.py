"""Fail open: writes made on behalf of a request never slow it down for long nor break it.

The middleware and the view decorators send their writes through :func:`send`, which

- uses a client of its own with a short timeout (``FAIL_OPEN_TIMEOUT``) and no retries;
- after a failure, opens a circuit breaker: no attempt at all for ``FAIL_OPEN_COOLDOWN``
  seconds, then the next request tries again (and closes the breaker if Redis answers);
- logs a warning when the breaker opens, again at most once per cooldown while Redis keeps
  failing, and one line when Redis answers again (with how many requests' writes were dropped);
- drops the writes it could not send.

A write Redis stored but whose follow-up failed, or that the server refused on its own (a user
id of the wrong kind, a key holding another type, an overflowing slice: see
:func:`django_redis_metrics.batch.refuses_only_this_write`), is a data error, not an outage:
it is logged once per (metric, error type) per cooldown, and the breaker stays closed.

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
from redis.retry import Retry

from .batch import Batch, refuses_only_this_write
from .conf import conf
from .connection import REDIS_ERRORS, RedisClient, get_redis_connection, is_url, using_client

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

    def allow(self, submissions: int = 1) -> bool:
        """Whether a write may be attempted now (counts the requests' writes it refuses)."""
        if self.is_open:
            with self._lock:
                self.dropped += submissions
            return False
        return True

    def failure(self, exc: BaseException, submissions: int = 0) -> None:
        """Open the breaker after ``exc``; ``submissions``: requests' writes dropped with it."""
        cooldown = conf.FAIL_OPEN_COOLDOWN
        with self._lock:
            already_open = self._open_until is not None
            self._open_until = self.clock() + cooldown
            self.dropped += submissions
        if not already_open:
            logger.warning(
                "Metrics disabled for %.0f s: Redis at %s failed (%s: %s). "
                "Requests are served without recording metrics.",
                cooldown,
                _where(),
                type(exc).__name__,
                exc,
            )
        else:
            logger.warning(
                "Metrics still disabled for %.0f s: Redis failed again (%s: %s).",
                cooldown,
                type(exc).__name__,
                exc,
            )

    def success(self) -> None:
        if self._open_until is None:
            return
        with self._lock:
            was_open, self._open_until = self._open_until is not None, None
            dropped, self.dropped = self.dropped, 0
        if was_open:
            from .recorder import sender

            logger.warning(
                "Metrics enabled again: Redis answers (%d requests' writes were dropped while "
                "it failed; %d in total since start because the queue was full).",
                dropped,
                sender.dropped,
            )

    def reset(self) -> None:
        with self._lock:
            self._open_until = None
            self.dropped = 0

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()


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
            return RedisCluster.from_url(target, retry=Retry(NoBackoff(), 0), **options)
        return redis.Redis.from_url(target, retry=Retry(NoBackoff(), 0), **options)
    shared = get_redis_connection()
    if not isinstance(shared, redis.Redis):
        return shared
    pool = shared.connection_pool
    kwargs = {**pool.connection_kwargs, **options, "retry": Retry(NoBackoff(), 0)}
    new_pool = pool.__class__(connection_class=pool.connection_class, **kwargs)
    return redis.Redis(connection_pool=new_pool)


class RateLimitedLog:
    """Logs a message at most once per key per ``FAIL_OPEN_COOLDOWN``, counting the rest."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._last: dict[tuple[str, str], float] = {}
        self._suppressed: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def log(
        self,
        level: int,
        key: tuple[str, str],
        message: str,
        *args: Any,
        exc_info: BaseException | None = None,
    ) -> bool:
        """Log unless ``key`` was logged within the cooldown; whether it was logged."""
        now = self.clock()
        with self._lock:
            last = self._last.get(key)
            if last is not None and now - last < conf.FAIL_OPEN_COOLDOWN:
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return False
            if len(self._last) > 1000:  # bounded: keys come from metric names
                self._last.clear()
            self._last[key] = now
            skipped = self._suppressed.pop(key, 0)
        if skipped:
            message += f" ({skipped} more like it were not logged)"
        logger.log(level, message, *args, exc_info=exc_info)
        return True

    def reset(self) -> None:
        with self._lock:
            self._last.clear()
            self._suppressed.clear()

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()


#: Data errors of request-time writes, logged once per (metric, error type) per cooldown.
data_errors = RateLimitedLog()


def report_data_error(label: str, exc: Exception, stored: bool) -> None:
    """Log (rate-limited) a write that failed for a reason other than an unreachable Redis.

    ``stored``: the round trip succeeded; only this write was refused or its follow-up failed.
    """
    kind = type(exc).__name__
    what = (
        "Metrics write to %s was not applied or not completed"
        if stored
        else "Metrics write to %s could not be prepared and was dropped"
    )
    if isinstance(exc, (ValueError, TypeError)) or refuses_only_this_write(exc):
        data_errors.log(logging.WARNING, (label, kind), what + ": %s: %s", label, kind, exc)
    else:
        data_errors.log(
            logging.ERROR, (label, kind), what + " (unexpected %s).", label, kind, exc_info=exc
        )


def _label(batch: Batch, index: int) -> str:
    call = batch.errors[index][0]
    return str(call.keys[0]) if call.keys else call.script.name


def reset_clients() -> None:
    """Forget the fail-open clients and close the breaker; for tests."""
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        client.close()
    breaker.reset()
    data_errors.reset()


def send(batch: Batch, submissions: int = 1) -> bool:
    """Send ``batch`` in one round trip unless the breaker is open; never raises.

    ``submissions``: how many requests' writes the batch holds (counted when dropped).
    Returns whether the writes were stored (the batch is emptied either way).
    """
    stored = prepare_and_send(lambda: batch, submissions)
    batch.calls.clear()
    return stored


def prepare_and_send(prepare: Callable[[], Batch], submissions: int = 1) -> bool:
    """Build a batch with ``prepare()`` and send it, both through the fail-open client (so a
    write that must ask Redis while being prepared, e.g. on a cluster, waits no longer than
    ``FAIL_OPEN_TIMEOUT``); never raises. Returns whether the writes were stored."""
    if not breaker.allow(submissions):
        return False
    batch: Batch | None = None
    try:
        client = fail_open_client()
        with using_client(client):
            batch = prepare()
            if not batch.calls:
                return True
            batch.client = client
            batch.execute()
    except REDIS_ERRORS as exc:
        if (
            batch is not None
            and batch.sent
            and not any(
                isinstance(error, REDIS_ERRORS) and not refuses_only_this_write(error)
                for _call, error in batch.errors
            )
        ):  # Redis answered and refused some writes (e.g. WRONGTYPE): not an outage
            return _stored_with_errors(batch)
        if batch is not None:
            batch.calls.clear()
        breaker.failure(exc, submissions)
        return False
    except Exception as exc:
        if batch is None or not batch.sent:
            if batch is not None:
                batch.calls.clear()
            report_data_error("a batch", exc, stored=False)
            return False
        return _stored_with_errors(batch)
    breaker.success()
    return True


def _stored_with_errors(batch: Batch) -> bool:
    """The round trip succeeded but some writes were refused or not completed: log those."""
    breaker.success()
    for index, (_call, error) in enumerate(batch.errors):
        report_data_error(_label(batch, index), error, stored=True)
    return True


def _after_fork_in_child() -> None:
    """The parent's locks may have been held by its sender thread: never reuse them."""
    global _clients_lock
    _clients_lock = threading.Lock()
    _clients.clear()  # keyed by pid anyway; drop the parent's without closing its sockets
    breaker._after_fork_in_child()
    data_errors._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
