"""Fail open: writes made on behalf of a request never slow it down for long nor break it.

The sender (``sender.py``) sends its batches through :func:`prepare_and_send`, which

- uses a client with a short timeout (``FAIL_OPEN_TIMEOUT``) and no retries;
- after a failure, opens a circuit breaker: no attempt at all for ``FAIL_OPEN_COOLDOWN``
  seconds, then the next request tries again (and closes the breaker if Redis answers);
- logs a warning when the breaker opens, again at most once per cooldown while Redis keeps
  failing, and one line when Redis answers again (with how many requests' writes were dropped);
- drops the writes it could not send.

Data errors (one write refused, see ``reporting.py``) leave the breaker closed. The models' own
methods are not affected: called directly, they raise.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from ..conf import conf
from ..core.batch import Batch, refuses_only_this_write
from ..core.connection import (
    REDIS_ERRORS,
    fail_fast_connection,
    redacted,
    reset_connections,
    using_client,
)
from .reporting import data_errors, logger, report_data_error


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

    def success(self, queue_dropped: int = 0) -> None:
        """Close the breaker; ``queue_dropped``: writes the sender's full queue dropped so far."""
        if self._open_until is None:
            return
        with self._lock:
            was_open, self._open_until = self._open_until is not None, None
            dropped, self.dropped = self.dropped, 0
        if was_open:
            logger.warning(
                "Metrics enabled again: Redis answers (%d requests' writes were dropped while "
                "it failed; %d in total since start because the queue was full).",
                dropped,
                queue_dropped,
            )

    def reset(self) -> None:
        with self._lock:
            self._open_until = None
            self.dropped = 0

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()


#: The process-wide breaker shared by the middleware and the decorators.
breaker = CircuitBreaker()


def _where() -> str:
    return redacted(conf.CONNECTION)


def _label(batch: Batch, index: int) -> str:
    call = batch.errors[index][0]
    return str(call.keys[0]) if call.keys else call.script.name


def reset() -> None:
    """Close the breaker, forget logged errors and the fail-fast clients; for tests."""
    reset_connections(fail_fast_only=True)
    breaker.reset()
    data_errors.reset()


def prepare_and_send(
    prepare: Callable[[], Batch], submissions: int = 1, queue_dropped: int = 0
) -> bool:
    """Build a batch with ``prepare()`` and send it, both through the fail-open client (so a
    write that must ask Redis while being prepared, e.g. on a cluster, waits no longer than
    ``FAIL_OPEN_TIMEOUT``); never raises. Returns whether the writes were stored.
    ``queue_dropped`` (the sender's overflow count) is reported when the breaker closes."""
    if not breaker.allow(submissions):
        return False
    batch: Batch | None = None
    try:
        client = fail_fast_connection()
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
            return _stored_with_errors(batch, queue_dropped)
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
        return _stored_with_errors(batch, queue_dropped)
    breaker.success(queue_dropped)
    return True


def _stored_with_errors(batch: Batch, queue_dropped: int) -> bool:
    """The round trip succeeded but some writes were refused or not completed: log those."""
    breaker.success(queue_dropped)
    for index, (_call, error) in enumerate(batch.errors):
        report_data_error(_label(batch, index), error, stored=True)
    return True


def _after_fork_in_child() -> None:
    """The parent's locks may have been held by its sender thread: never reuse them."""
    breaker._after_fork_in_child()
    data_errors._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
