"""The write path of the middleware, the decorators and deferred writes: off the request, one
round trip per batch, and nothing lost or counted twice while Redis is slow or away.

A request's writes (``writes.py``) are handed to the process's :class:`Sender`: the request only
appends them to a bounded buffer (``buffer.py``) and never waits on Redis, under WSGI or ASGI.
A daemon thread waits up to ``SENDER["DELAY"]`` after the first write it sees, merges up to
``SENDER["BATCH_SIZE"]`` requests' writes into one batch and sends it in one pipelined round trip
through the fail-open client (``failopen.py``).

While Redis fails, the batch is *held*: sent again, the same batch with the same numbers, after
``SENDER["RETRY_DELAY"]``, doubling up to ``["RETRY_MAX_DELAY"]``, or on Redis Cluster as soon as
a replica was promoted for its slots (``core/slot_watch.py``); new writes queue behind it. Each
call of a batch goes through its script's idempotent variant (``core/scripts.py``) with this
process's sender id and a number that grows with every call sent, so a batch whose reply was
lost (it may have been applied) is not applied twice. When Redis answers, the backlog drains in
batches of ``SENDER["BATCH_SIZE"]``, on this thread. Only a full buffer (``SENDER["QUEUE_SIZE"]``
requests or ``["QUEUE_BYTES"]``) drops writes: they are counted, and reported once per outage.

:func:`flush` waits until everything queued has been stored (tests, shutdown). After a fork
the child gets new locks, an empty buffer, a new sender id and its own thread.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..conf import conf
from ..core import deferral
from ..core.batch import ScriptCall, is_outage
from ..core.connection import REDIS_ERRORS, using_client
from ..core.slot_watch import SlotWatch
from . import failopen
from .buffer import Buffer, Taken
from .reporting import logger, report_data_error
from .writes import Submission, Writes, build_batch


@dataclass
class Held:
    """A prepared batch: sent again as it is (same calls, same numbers) until Redis stores it."""

    calls: list[ScriptCall]
    taken: Taken
    #: On Redis Cluster, who owns the batch's slots, watched once it failed (``SlotWatch``).
    watch: SlotWatch | None = None
    watched: bool = False


def new_sender_id() -> str:
    """A sender's id: 64 random bits, unique among a site's processes for all practical use."""
    return uuid.uuid4().hex[:16]


class Sender:
    """A daemon thread per process sending buffered writes, merged, in one round trip each."""

    def __init__(self) -> None:
        self._start_afresh()
        self._zero_statistics()

    def _zero_statistics(self) -> None:
        #: Submissions dropped because the buffer was full (since start, fork or reset).
        self.dropped = 0
        #: Batches stored, each in one round trip.
        self.round_trips = 0
        #: Attempts that failed because Redis did (each is retried).
        self.failures = 0
        #: Idempotent calls Redis found already applied when sent again (their reply was lost).
        self.duplicates = 0

    def _start_afresh(self) -> None:
        """New locks, an empty buffer, a new id: at start, and in a forked child, where the
        parent's thread may have held the locks and still sends the parent's writes."""
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # the thread: work, hurry, reset
        self._idle = threading.Condition(self._lock)  # flush(): something was stored
        self._buffer = Buffer()
        self._held: Held | None = None
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._hurry = False
        self._generation = 0
        self._backoff = failopen.Backoff()
        self._outage = failopen.Outage()
        self._dropped_lately = 0  # not reported yet
        self._full_warned = False  # until the buffer is empty again
        self.id = new_sender_id()
        self._seq = 0

    def _after_fork_in_child(self) -> None:
        self._start_afresh()
        self._zero_statistics()

    # The request's side: queue and return.

    def submit(self, writes: Writes, when: float | None = None) -> bool:
        """Queue ``writes``; False if they were dropped because the buffer is full."""
        if not writes:
            return True
        submission = Submission(writes, int(time.time() if when is None else when))
        options = conf.SENDER  # the setting read once for its three limits
        with self._lock:
            if self._pid != os.getpid() or self._thread is None or not self._thread.is_alive():
                self._start_thread()
            if not self._buffer.put(submission, options.queue_size, options.queue_bytes):
                self.dropped += 1
                self._dropped_lately += 1
                first, self._full_warned = not self._full_warned, True
                count, size = self._buffer.count, self._buffer.size
            else:
                waiting = len(self._buffer)
                if waiting == 1 or waiting >= options.batch_size:
                    self._changed.notify()
                return True
        if first:  # once until the buffer is empty again; logged outside the lock
            logger.warning(
                "Metrics buffer full (%d requests' writes, about %d KiB, waiting for Redis): "
                "dropping new writes; how many is reported when Redis answers.",
                count,
                size // 1024,
            )
        return False

    def _start_thread(self) -> None:
        # Called with the lock held.
        if self._pid != os.getpid():  # pragma: no cover - the fork hook already did this
            self._after_fork_in_child()
        self._thread = threading.Thread(target=self._run, name="metrics-sender", daemon=True)
        self._thread.start()

    # The sender thread.

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._buffer.count:
                    self._changed.wait()
                generation, held = self._generation, self._held
            try:
                if held is None:
                    self._linger()
                    held = self._prepare(generation)
                if held is not None:
                    self._send(held, generation)
            except Exception:  # pragma: no cover - a bug: keep the thread alive, drop nothing
                logger.exception("The metrics sender failed.")
                time.sleep(1)

    def _linger(self) -> None:
        """Wait ``SENDER["DELAY"]`` for more writes to merge, unless flushed or a batch is
        full."""
        options = conf.SENDER
        deadline = time.monotonic() + options.delay
        batch_size = options.batch_size
        with self._lock:
            while not self._hurry and len(self._buffer) < batch_size:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._changed.wait(remaining)
            self._hurry = False

    def _prepare(self, generation: int) -> Held | None:
        """Take a batch from the buffer and build its calls with the fail-open client; if Redis
        fails meanwhile (nothing was sent), put it back and wait before trying again."""
        with self._lock:
            if generation != self._generation:
                return None
            taken = self._buffer.take(conf.SENDER.batch_size)
        try:
            with using_client(failopen.client()):
                calls = build_batch(taken.items).calls
        except Exception as error:
            if is_outage(error):
                with self._lock:
                    if generation == self._generation:
                        self._buffer.put_back(taken)
                self._failed(error, generation)
                return None
            report_data_error("a batch", error, stored=False)
            calls = []
        held = Held(self._numbered(calls), taken)
        with self._lock:
            if generation != self._generation:
                return None
            self._held = held
        return held

    def _numbered(self, calls: list[ScriptCall]) -> list[ScriptCall]:
        """``calls`` made idempotent, numbered in sending order, each naming the previous call
        of the batch on its metric (applied first, whatever redirections happen)."""
        last: dict[str, int] = {}
        numbered = []
        for call in calls:
            self._seq += 1
            key = call.once_key()
            numbered.append(call.once(self.id, self._seq, last.get(key, 0)))
            last[key] = self._seq
        return numbered

    def _send(self, held: Held, generation: int) -> None:
        error, duplicates = failopen.send(held.calls) if held.calls else (None, 0)
        if error is not None:
            self._failed(error, generation, held)
            return
        with self._lock:
            if generation != self._generation:
                return
            self._held = None
            self._buffer.done(held.taken)
            self.round_trips += bool(held.calls)
            self.duplicates += duplicates
            self._backoff.reset()
            outage_ended = self._outage.ongoing
            drained = not self._buffer.count
            dropped = self._dropped_lately if outage_ended or drained else 0
            self._dropped_lately -= dropped
            if drained:
                self._full_warned = False
        if outage_ended:
            self._outage.ended(dropped)
        elif dropped:
            logger.warning(
                "Metrics buffer drained: %d requests' writes were dropped while it was full.",
                dropped,
            )
        with self._lock:  # flush() returns once the end of the outage is logged
            self._idle.notify_all()

    def _failed(self, error: BaseException, generation: int, held: Held | None = None) -> None:
        """Redis failed: say so once per outage, then wait (backoff) before trying again; on a
        cluster, check who owns the held batch's slots every ``SEND_RETRY_DELAY`` meanwhile,
        and try again at once when a replica was promoted."""
        with self._lock:
            if generation != self._generation:
                return
            waiting = self._buffer.count
        self._outage.failed(error, waiting)
        with self._lock:  # counted once logged: whoever watches the count sees the warning
            self.failures += 1
        deadline = time.monotonic() + self._backoff.next_delay()
        watch = self._watch(held)
        while True:
            with self._lock:
                check_at = deadline
                if watch is not None:
                    check_at = min(deadline, time.monotonic() + conf.SENDER.retry_delay)
                while generation == self._generation and not self._hurry:
                    remaining = check_at - time.monotonic()
                    if remaining <= 0:
                        break
                    self._changed.wait(remaining)
                if watch is None or self._hurry or generation != self._generation:
                    break
                if time.monotonic() >= deadline:
                    break
            if watch.moved():  # a round trip: outside the lock
                break
        with self._lock:
            self._hurry = False

    @staticmethod
    def _watch(held: Held | None) -> SlotWatch | None:
        """The held batch's slot watch, made at its first failure; ``None`` off a cluster."""
        if held is None or not held.calls:
            return None
        if not held.watched:
            try:
                held.watch = SlotWatch.of(failopen.client(), held.calls)
                held.watched = True
            except REDIS_ERRORS:  # no client to be had yet: the backoff alone, this time
                pass
        return held.watch

    # Callers outside the thread.

    def flush(self, timeout: float = 10.0) -> bool:
        """Send every queued write now and wait until it was stored (or dropped as a data
        error); False on timeout, e.g. while Redis is away (the writes stay queued)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self._buffer.count and self._pid == os.getpid():
                self._hurry = True  # until the thread takes it, even after a timeout
                self._changed.notify()
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._idle.wait(remaining)
        return True

    def pending(self) -> int:
        """Requests' writes queued or being sent, not yet stored."""
        with self._lock:
            return self._buffer.count

    def reset(self) -> None:
        """Discard every queued and held write, forget any outage and zero the statistics; for
        tests, whose settings (``CONNECTION``, ``PREFIX``) change between writes. A round trip
        under way finishes, but its outcome is ignored."""
        with self._lock:
            self._zero_statistics()
            self._generation += 1
            self._buffer.clear()
            self._held = None
            self._hurry = False
            self._dropped_lately = 0
            self._full_warned = False
            self._backoff.reset()
            self._outage.reset()
            self._changed.notify_all()
            self._idle.notify_all()


#: The process's sender.
sender = Sender()


class DeferredWrites:
    """The sink of ``defer=True`` writes made by the models (see ``core/deferral.py``)."""

    def incr(self, counter: Any, count: int, when: float) -> bool:
        writes = Writes()
        writes.incr(counter, count)
        return sender.submit(writes, when)

    def mark(self, bitmap: Any, user_id: Any, when: float) -> bool:
        writes = Writes()
        writes.mark(bitmap, user_id, when)
        return sender.submit(writes, when)

    def write(self, label: str, write: deferral.Write) -> bool:
        writes = Writes()
        writes.defer(write, label)
        return sender.submit(writes)


deferral.register(DeferredWrites())


# The sender thread may hold the sender's locks at a fork: the child makes them anew (each
# module owns the hook of its own locks, e.g. bitmaps/ids.py's id cache).
os.register_at_fork(after_in_child=sender._after_fork_in_child)


def submit(writes: Writes, when: float | None = None) -> bool:
    return sender.submit(writes, when)


def flush(timeout: float = 10.0) -> bool:
    """Wait until every queued metrics write was stored; False on timeout."""
    return sender.flush(timeout)


def reset() -> None:
    """Discard queued writes, fail-fast clients and logged errors; for tests."""
    sender.reset()
    failopen.reset()


@atexit.register
def _flush_at_exit() -> None:
    with contextlib.suppress(Exception):  # settings may be unusable at exit
        sender.flush(timeout=2 * conf.SENDER.timeout)
