"""The write path of the middleware and the decorators: off the request, one round trip.

A request's writes (counter hits, user marks, events) are collected in a :class:`Writes`
and handed to the process's :class:`Sender`, a daemon thread that sends them to Redis through
:func:`django_redis_metrics.failopen.send`: one pipelined round trip for everything one request
records, or for everything several requests recorded while the previous round trip was under
way (hits on the same counter in the same second are then summed into one increment, a user
marked twice is marked once). The request itself only appends to a queue: it never waits on
Redis, under WSGI or ASGI, and a Redis that is down or slow cannot slow it.

The sender waits up to ``SEND_DELAY`` after the first write it sees before sending, so a busy
process sends a few merged round trips per second instead of one per request: the sender's
work, which shares the GIL with the requests, then costs each request next to nothing. Writes
still reach Redis within ``SEND_DELAY`` plus one round trip.

The queue is bounded (``MAX_PENDING`` submissions); beyond it writes are dropped, counted in
``sender.dropped`` and a warning is logged (at most once per ``FAIL_OPEN_COOLDOWN``).
:func:`flush` waits until everything queued has been sent or dropped (tests, shutdown). After a
fork the child gets new locks, a new queue and a new thread (``os.register_at_fork``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .batch import Batch
from .bitmaps import UniqueBitmap
from .connection import REDIS_ERRORS
from .counter import Counter
from .periods import get_zone

logger = logging.getLogger("django_redis_metrics")

#: Most submissions waiting to be sent; more are dropped (Redis is then far behind anyway).
MAX_PENDING = 10_000
#: Most submissions merged into one round trip; this many waiting are sent without delay.
MAX_MERGED = 500
#: Seconds the sender waits after the first write it sees, merging what follows into the same
#: round trip (``flush`` and a full ``MAX_MERGED`` batch cut the wait short).
SEND_DELAY = 0.05

Deferred = Callable[[Batch], None]


@dataclass
class Writes:
    """What one request (or one decorated view call) records, not yet sent.

    A metric is given by name (configured by the settings' defaults) or as a declared
    ``Counter``/``UniqueBitmap``, whose precisions or periods are then used.
    """

    hits: list[tuple[str | Counter, int]] = field(default_factory=list)
    marks: list[tuple[str | UniqueBitmap, Any, float]] = field(default_factory=list)
    deferred: list[tuple[str, Deferred]] = field(default_factory=list)

    def incr(self, counter: str | Counter, count: int = 1) -> None:
        self.hits.append((counter, count))

    def mark(self, bitmap: str | UniqueBitmap, user_id: Any, when: float | None = None) -> None:
        self.marks.append((bitmap, user_id, time.time() if when is None else when))

    def defer(self, write: Deferred, label: str = "") -> None:
        """Queue ``write(batch)``: any model write made with ``batch=batch``; ``label`` (the
        metric's name) names it in logs."""
        self.deferred.append((label or getattr(write, "__qualname__", "a write"), write))

    def __bool__(self) -> bool:
        return bool(self.hits or self.marks or self.deferred)


@dataclass
class _Submission:
    writes: Writes
    second: int


def _local_hour(when: float, zone: Any) -> int:
    """The start of the local hour holding ``when``: marks in the same local hour set the same
    bits in every period (an hour never straddles a local day, even in half-hour zones)."""
    start = datetime.fromtimestamp(when, zone).replace(minute=0, second=0, microsecond=0)
    return int(start.timestamp())


def build_batch(submissions: list[_Submission]) -> Batch:
    """One batch for many submissions: hits summed per (counter, second), marks deduplicated
    per (bitmap, user, local hour).

    A Redis error while preparing (a first-seen str user id on Redis Cluster is mapped first)
    propagates: the caller opens the breaker. Any other error drops only that write (logged,
    rate-limited).
    """
    from .failopen import report_data_error

    batch = Batch()
    hits: dict[tuple[str | int, int], tuple[str | Counter, int]] = {}
    marks: dict[tuple[str | int, Any, int], tuple[str | UniqueBitmap, float]] = {}
    zone = get_zone() if any(item.writes.marks for item in submissions) else None
    for item in submissions:
        for counter, count in item.writes.hits:
            key = (_merge_key(counter), item.second)
            hits[key] = (counter, hits[key][1] + count if key in hits else count)
        for bitmap, user_id, when in item.writes.marks:
            marks[(_merge_key(bitmap), user_id, _local_hour(when, zone))] = (bitmap, when)
    writes: list[tuple[str, Deferred]] = []
    for (_counter, second), (counter, count) in hits.items():
        writes.append((_name(counter), _incr(counter, count, second)))
    for (_bitmap, user_id, _hour), (bitmap, when) in marks.items():
        writes.append((_name(bitmap), _mark(bitmap, user_id, when)))
    for item in submissions:
        writes += item.writes.deferred
    for label, write in writes:
        try:
            write(batch)
        except REDIS_ERRORS:
            batch.calls.clear()
            raise
        except Exception as exc:
            report_data_error(label, exc, stored=False)
    return batch


def _merge_key(metric: str | Counter | UniqueBitmap) -> str | int:
    """Writes to one name merge; a declared metric merges only with itself (two declarations
    of one name may differ, and a ``Counter`` equals any other of the same name)."""
    return metric if isinstance(metric, str) else id(metric)


def _name(metric: str | Counter | UniqueBitmap) -> str:
    return metric if isinstance(metric, str) else metric.name


def _incr(counter: str | Counter, count: int, second: int) -> Deferred:
    metric = Counter(counter) if isinstance(counter, str) else counter
    return lambda batch: metric.incr(count, when=second, batch=batch)


def _mark(bitmap: str | UniqueBitmap, user_id: Any, when: float) -> Deferred:
    metric = UniqueBitmap(bitmap) if isinstance(bitmap, str) else bitmap
    return lambda batch: metric.mark(user_id, when=when, batch=batch)


class Sender:
    """A daemon thread per process sending queued writes, merged, in one round trip each."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[_Submission | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._wake = threading.Condition(self._lock)
        self._pending = 0
        self._hurry = False
        #: Submissions dropped because the queue was full (since start or fork).
        self.dropped = 0
        self._last_overflow_log: float | None = None
        self.round_trips = 0

    def _after_fork_in_child(self) -> None:
        """The parent's sender thread may have held these at the fork: start afresh."""
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._wake = threading.Condition(self._lock)
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._pending = 0
        self._hurry = False
        self._pid = os.getpid()
        self.dropped = 0
        self._last_overflow_log = None

    def submit(self, writes: Writes, when: float | None = None) -> bool:
        """Queue ``writes``; False if they were dropped (breaker open, or queue full)."""
        from .failopen import breaker

        if not writes:
            return True
        if not breaker.allow():
            return False
        second = int(time.time() if when is None else when)
        with self._lock:
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._start()
            if self._pending >= MAX_PENDING:
                self.dropped += 1
                self._overflowed()
                return False
            self._pending += 1
            if self._pending >= MAX_MERGED:
                self._wake.notify()
        self._queue.put(_Submission(writes, second))
        return True

    def _overflowed(self) -> None:
        # Called with the lock held: log the first overflow, then at most once per cooldown.
        from .conf import conf

        now = time.monotonic()
        last = self._last_overflow_log
        if last is not None and now - last < conf.FAIL_OPEN_COOLDOWN:
            return
        self._last_overflow_log = now
        logger.warning(
            "Metrics queue full (%d requests' writes waiting): dropping new writes "
            "(%d dropped so far). Redis is too slow for this traffic.",
            MAX_PENDING,
            self.dropped,
        )

    def _start(self) -> None:
        # Called with the lock held; after a fork the parent's thread and queue are gone.
        if self._pid != os.getpid():
            self._queue = queue.SimpleQueue()
            self._pending = 0
            self._pid = os.getpid()
        self._thread = threading.Thread(target=self._run, name="metrics-sender", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from . import failopen

        while True:
            first = self._queue.get()
            if first is None:
                return
            self._linger()
            items = [first]
            while len(items) < MAX_MERGED:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)
                    break
                items.append(item)
            try:
                failopen.prepare_and_send(functools.partial(self._prepare, items), len(items))
            except Exception:  # pragma: no cover - send() never raises; keep the thread alive
                logger.exception("The metrics sender failed.")
            with self._lock:
                self._pending -= len(items)
                self._idle.notify_all()

    def _linger(self) -> None:
        """Wait ``SEND_DELAY`` for more writes to merge, unless flushed or a batch is full."""
        deadline = time.monotonic() + SEND_DELAY
        with self._lock:
            while not self._hurry and self._pending < MAX_MERGED:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._wake.wait(remaining)
            self._hurry = False

    def _prepare(self, items: list[_Submission]) -> Batch:
        batch = build_batch(items)
        if batch.calls:
            self.round_trips += 1
        return batch

    def flush(self, timeout: float = 10.0) -> bool:
        """Send every queued write now and wait until it was sent or dropped; False on
        timeout."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._pending and self._pid == os.getpid():
                self._hurry = True  # until the sender takes its next batch, even after a timeout
                self._wake.notify()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True


#: The process's sender.
sender = Sender()


def _after_fork_in_child() -> None:
    """Locks the sender thread may hold at a fork, made anew in the child: the sender's own
    and the id cache's that preparing a mark takes (bitmaps.py)."""
    from . import bitmaps

    sender._after_fork_in_child()
    bitmaps.id_cache._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def submit(writes: Writes, when: float | None = None) -> bool:
    return sender.submit(writes, when)


def flush(timeout: float = 10.0) -> bool:
    """Wait until every queued metrics write was sent (or dropped)."""
    return sender.flush(timeout)


@atexit.register
def _flush_at_exit() -> None:
    from .conf import conf

    with contextlib.suppress(Exception):  # settings may be unusable at exit
        sender.flush(timeout=2 * conf.FAIL_OPEN_TIMEOUT)
