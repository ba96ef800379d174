"""The sender's buffer: what requests queued, bounded by count and by (estimated) bytes.

A submission stays counted from the moment a request queues it until Redis has stored it, so
the writes held while Redis is away count against the same bounds as those waiting behind them.
Not thread-safe on its own: the sender calls it under its lock.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .writes import Submission

#: Estimated bytes of one queued submission: the submission and its writes, plus each counter
#: hit (a name and a count), each mark (a bitmap, a user id, a time) and each deferred write (a
#: closure and the values it holds, e.g. an event's four fields). Measured with tracemalloc
#: (``tests/sending/test_sender_buffer.py``): 690 bytes for a request counted by the
#: middleware (2 hits), 830 with its user marked, 1,215 with an event recorded by a decorator;
#: the estimates (770, 930, 1,370) keep a margin of about a tenth.
SUBMISSION_BYTES = 450
HIT_BYTES = 160
MARK_BYTES = 160
DEFERRED_BYTES = 600


def estimated_size(submission: Submission) -> int:
    """The bytes ``submission`` is taken to occupy while it waits (see the constants)."""
    writes = submission.writes
    return (
        SUBMISSION_BYTES
        + HIT_BYTES * len(writes.hits)
        + MARK_BYTES * len(writes.marks)
        + DEFERRED_BYTES * len(writes.deferred)
    )


@dataclass
class Taken:
    """Submissions (with their sizes) taken out of the queue to be sent; still counted until
    :meth:`Buffer.done`."""

    entries: list[tuple[Submission, int]]

    @property
    def items(self) -> list[Submission]:
        return [submission for submission, _size in self.entries]

    @property
    def size(self) -> int:
        return sum(size for _submission, size in self.entries)


class Buffer:
    """Queued submissions in order, with the count and bytes of everything not yet stored."""

    def __init__(self) -> None:
        self._queue: deque[tuple[Submission, int]] = deque()
        #: Submissions not yet stored: queued, or taken into a batch being sent.
        self.count = 0
        #: Their estimated bytes.
        self.size = 0

    def __len__(self) -> int:
        """Submissions waiting in the queue (not those taken)."""
        return len(self._queue)

    def put(self, submission: Submission, max_count: int, max_bytes: int) -> bool:
        """Queue ``submission`` unless that would pass either bound; whether it was queued."""
        size = estimated_size(submission)
        if self.count + 1 > max_count or self.size + size > max_bytes:
            return False
        self._queue.append((submission, size))
        self.count += 1
        self.size += size
        return True

    def take(self, most: int) -> Taken:
        """The oldest ``most`` queued submissions (still counted)."""
        entries: list[tuple[Submission, int]] = []
        while self._queue and len(entries) < most:
            entries.append(self._queue.popleft())
        return Taken(entries)

    def put_back(self, taken: Taken) -> None:
        """Return submissions that could not be prepared to the front of the queue, in order."""
        self._queue.extendleft(reversed(taken.entries))

    def done(self, taken: Taken) -> None:
        """``taken`` was stored (or given up): it no longer counts."""
        self.count -= len(taken.entries)
        self.size -= taken.size

    def clear(self) -> None:
        self._queue.clear()
        self.count = 0
        self.size = 0
