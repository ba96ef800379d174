"""Logs of the write path: rate-limited, so a failing Redis or a bad metric never floods them.

A write Redis stored but whose follow-up failed, or that the server refused on its own (a user
id of the wrong kind, a key holding another type, an overflowing slice: see
:func:`django_redis_metrics.core.batch.refuses_only_this_write`), is a data error, not an outage:
it is logged once per (metric, error type) per :attr:`RateLimitedLog.INTERVAL`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from ..core.batch import refuses_only_this_write

logger = logging.getLogger("django_redis_metrics")


class RateLimitedLog:
    """Logs a message at most once per key per ``INTERVAL``, counting the rest."""

    #: Seconds between two logs of one (metric, error type).
    INTERVAL: float = 30.0

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
            if last is not None and now - last < self.INTERVAL:
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


#: Data errors of request-time writes, logged once per (metric, error type) per ``INTERVAL``.
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
