"""The write path of the middleware and the decorators: off the request, one round trip.

A request's writes (``writes.py``) are handed to the process's :class:`Sender`, a daemon
thread that sends them to Redis through :func:`~.failopen.prepare_and_send`: one pipelined round
trip for everything one request records, or for everything several requests recorded while the
previous round trip was under way. The request itself only appends to a queue: it never waits on
Redis, under WSGI or ASGI, and a Redis that is down or slow cannot slow it.

The sender waits up to ``SEND_DELAY`` after the first write it sees before sending, so a busy
process sends a few merged round trips per second instead of one per request: the sender's
work, which shares the GIL with the requests, then costs each request next to nothing. Writes
still reach Redis within ``SEND_DELAY`` plus one round trip.

The queue is bounded (``SEND_QUEUE_SIZE`` submissions); beyond it writes are dropped, counted in
``sender.dropped`` and a warning is logged (at most once per ``FAIL_OPEN_COOLDOWN``).
:func:`flush` waits until everything queued has been sent or dropped (tests, shutdown). After a
fork the child gets new locks, a new queue and a new thread (``os.register_at_fork``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import queue
import threading
import time

from ..bitmaps.ids import id_cache
from ..conf import conf
from ..core.batch import Batch
from . import failopen
from .reporting import logger
from .writes import Submission, Writes, build_batch


class Sender:
    """A daemon thread per process sending queued writes, merged, in one round trip each."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[Submission | None] = queue.SimpleQueue()
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
        if not writes:
            return True
        if not failopen.breaker.allow():
            return False
        second = int(time.time() if when is None else when)
        with self._lock:
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._start()
            if self._pending >= conf.SEND_QUEUE_SIZE:
                self.dropped += 1
                self._overflowed()
                return False
            self._pending += 1
            if self._pending >= conf.SEND_BATCH_SIZE:
                self._wake.notify()
        self._queue.put(Submission(writes, second))
        return True

    def _overflowed(self) -> None:
        # Called with the lock held: log the first overflow, then at most once per cooldown.
        now = time.monotonic()
        last = self._last_overflow_log
        if last is not None and now - last < conf.FAIL_OPEN_COOLDOWN:
            return
        self._last_overflow_log = now
        logger.warning(
            "Metrics queue full (%d requests' writes waiting): dropping new writes "
            "(%d dropped so far). Redis is too slow for this traffic.",
            conf.SEND_QUEUE_SIZE,
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
        while True:
            first = self._queue.get()
            if first is None:
                return
            self._linger()
            items = [first]
            batch_size = conf.SEND_BATCH_SIZE
            while len(items) < batch_size:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)
                    break
                items.append(item)
            try:
                failopen.prepare_and_send(
                    functools.partial(self._prepare, items), len(items), self.dropped
                )
            except Exception:  # pragma: no cover - send() never raises; keep the thread alive
                logger.exception("The metrics sender failed.")
            with self._lock:
                self._pending -= len(items)
                self._idle.notify_all()

    def _linger(self) -> None:
        """Wait ``SEND_DELAY`` for more writes to merge, unless flushed or a batch is full."""
        deadline = time.monotonic() + conf.SEND_DELAY
        batch_size = conf.SEND_BATCH_SIZE
        with self._lock:
            while not self._hurry and self._pending < batch_size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._wake.wait(remaining)
            self._hurry = False

    def _prepare(self, items: list[Submission]) -> Batch:
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
    and the id cache's that preparing a mark takes (``bitmaps/ids.py``)."""
    sender._after_fork_in_child()
    id_cache._lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def submit(writes: Writes, when: float | None = None) -> bool:
    return sender.submit(writes, when)


def flush(timeout: float = 10.0) -> bool:
    """Wait until every queued metrics write was sent (or dropped)."""
    return sender.flush(timeout)


@atexit.register
def _flush_at_exit() -> None:
    with contextlib.suppress(Exception):  # settings may be unusable at exit
        sender.flush(timeout=2 * conf.FAIL_OPEN_TIMEOUT)
