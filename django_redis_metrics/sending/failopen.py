"""Fail open, lose nothing: how the sender talks to Redis, and what it makes of a failure.

The sender (``sender.py``) prepares and sends its batches through this module, which

- uses a client with a short timeout (``SENDER["TIMEOUT"]``) and no retries of its own, so the
  sender thread is never stuck on a slow Redis for long;
- tells an outage (Redis unreachable, slow, paused, restarting, out of memory, read-only,
  failing over: ``core.batch.is_outage``) from a refusal of one write (a data error: logged
  and dropped, never retried) and from a batch Redis refused as a whole for good (a bug or a
  misconfiguration: logged as an error and dropped, so it cannot block the writes behind it);
- on Redis Cluster, leaves the slot map to redis-py, which reloads it when a call meets a dead
  node or ``MOVED`` (at the first one: see ``fail_fast_connection``); a replica promoted while a
  batch waits is found by the sender's slot watch (``core/slot_watch.py``);
- paces the retries (:class:`Backoff`) and logs one warning when an outage starts and one when
  it ends (:class:`Outage`).

The models' own methods are not affected: called directly, they raise.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence

from ..conf import conf
from ..core.batch import ScriptCall, is_outage, run_calls
from ..core.connection import (
    RedisClient,
    fail_fast_connection,
    redacted,
    reset_connections,
)
from .replicated import confirm_replicated
from .reporting import data_errors, logger, report_data_error


class Backoff:
    """Delays between attempts while Redis fails: ``SENDER["RETRY_DELAY"]``, doubling up to
    ``SENDER["RETRY_MAX_DELAY"]``, each shortened by up to a fifth at random so that the
    processes of a site do not all knock at once."""

    def __init__(self) -> None:
        self.failures = 0

    def next_delay(self) -> float:
        options = conf.SENDER
        first, cap = options.retry_delay, options.retry_max_delay
        delay = min(cap, first * 2.0 ** min(self.failures, 32))
        self.failures += 1
        return delay * random.uniform(0.8, 1.0)

    def reset(self) -> None:
        self.failures = 0


class Outage:
    """One warning when Redis starts failing, one when it answers again."""

    def __init__(self) -> None:
        self.since: float | None = None

    @property
    def ongoing(self) -> bool:
        return self.since is not None

    def failed(self, error: BaseException, waiting: int) -> None:
        if self.since is not None:
            return
        self.since = time.monotonic()
        logger.warning(
            "Metrics writes are waiting: Redis at %s failed (%s: %s). Requests are served as "
            "usual; %d requests' writes are kept and sent when Redis answers.",
            redacted(conf.CONNECTION),
            type(error).__name__,
            error,
            waiting,
        )

    def ended(self, dropped: int) -> None:
        """Redis answered: log how long it failed and how many writes a full buffer dropped."""
        if self.since is None:
            return
        seconds, self.since = time.monotonic() - self.since, None
        logger.warning(
            "Metrics writes resumed: Redis at %s answers again after %.1f s; %d requests' "
            "writes were dropped meanwhile because the buffer was full.",
            redacted(conf.CONNECTION),
            seconds,
            dropped,
        )

    def reset(self) -> None:
        self.since = None


def client() -> RedisClient:
    """The fail-open client (short timeout, no retries) for the current settings."""
    return fail_fast_connection()


def send(calls: Sequence[ScriptCall]) -> tuple[BaseException | None, int]:
    """Send ``calls`` in one round trip with the fail-open client; never raises.

    Returns (the error if Redis failed and the calls must be sent again, else ``None``; how
    many idempotent calls Redis found already applied). Writes Redis refused one by one, and
    batches it refused for good, are logged (rate-limited) and not sent again. With
    ``SENDER["REPLICAS"]``, a batch too few replicas acknowledged is an outage
    (``replicated.py``).
    """
    errors: list[tuple[ScriptCall, Exception]] = []
    duplicates: list[ScriptCall] = []
    options = conf.SENDER
    try:
        target = client()
        run_calls(target, calls, errors, duplicates)
        if options.replicas:
            confirm_replicated(target, options.replicas, options.timeout)
    except Exception as error:
        if is_outage(error):
            return error, 0
        report_data_error("a batch", error, stored=False)
        return None, 0
    for call, refusal in errors:
        report_data_error(label(call), refusal, stored=True)
    return None, len(duplicates)


def label(call: ScriptCall) -> str:
    """How logs name the metric of ``call``: its first key."""
    return str(call.keys[0]) if call.keys else call.script.name


def reset() -> None:
    """Forget the fail-fast clients and logged errors; for tests (see ``sender.reset``)."""
    reset_connections(fail_fast_only=True)
    data_errors.reset()
