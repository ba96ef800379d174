"""An increment that opens a counter's next slices, as a bare transaction when this process can
prove what the script would decide: the write plan of ``fast.py``'s opening path.

``counter_incr.lua`` reads the Redis clock and the meta hash when a write opens a slice, to move
the head, delete the slices that fell out and refresh the TTLs. A process that knows the slices
it last wrote were already reached by the Redis clock then (so each head is at least there, and
every older slice that fell out of those heads' windows is gone) needs neither, for an increment
whose new slices the Redis clock has reached (:mod:`core.server_clock`'s bounds) and that lie
within the window of any head another writer may have moved to::

    MULTI
    HINCRBY <hash> <start> <count>            -- per precision, as the steady transaction
    HINCRBY meta t <count>
    HDEL <hash> <the starts that fell out>    -- per precision whose slice opens: from the
                                              --   known head's window to the new one's
    PEXPIRE <hash> <2 x retention> [NX]       -- NX until half the TTL it knows passed
    HSET meta h:<p> <start> ...               -- the heads
    PEXPIRE meta <the longest of those> GT    -- the meta hash outlives every slice hash
    EXEC

A process knows a TTL it set itself (it never shortens: the script only sets a later one, the
cleaner's compaction keeps it), so an opening refreshes it as the script does, once half of it
has passed: the first opening of each precision after a script call, then every half TTL (121
s at 1 s precision with 120 samples). In between, ``NX`` gives a TTL only to a hash the opening
made again (deleted, evicted), and writes nothing otherwise (no ``PEXPIREAT`` propagated to
replicas and the AOF on every opening).

The deletion is a superset of the script's (the known head is at most the real one), so a
hash never holds more than its samples. The heads are written as they are: two processes
opening consecutive slices at once may leave a head one slice low until the next opening, which
only makes a later script delete more than it must. At most :data:`OPEN_GAP` slices may have
fallen out per precision (a counter written at least every 16 s at 1 s precision); after a
longer pause, or for an increment the clock bounds cannot place, the script runs. Redis before
7.0 (no ``GT``) always takes the script. The replies are judged as the steady transaction's
(``fast.py``): a key missing, a slice trimmed or an error reply go the same ways.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.server_clock import Reading
from ..core.transaction import EXEC, command, key_bulks

if TYPE_CHECKING:
    from .fast import Fact, Opened

#: Most slices of one precision an opening may find fell out of the window since the slice this
#: process last wrote (each one a field ``HDEL`` looks for in the compact hash).
OPEN_GAP = 16


@dataclass(frozen=True, slots=True)
class Opening:
    """An increment's new slices and the commands the transaction adds for them."""

    starts: tuple[int, ...]
    #: Per precision, ``True`` where the increment's slice opens here.
    opens: tuple[bool, ...]
    #: The commands after the lifetime total's ``HINCRBY``: each its name, the index of its key
    #: (a precision's, or the meta hash's after them), its other arguments.
    upkeep: tuple[tuple[Any, ...], ...]
    #: :attr:`Opened.alive` once it ran.
    alive: tuple[float, ...]

    def pack(self, connection: Any, steady: bytes, keys: Sequence[str]) -> bytes:
        """The request up to its ``EXEC``: the steady transaction's (``steady``, whole), then
        the upkeep of ``keys`` (each precision's hash, then the meta hash), whose encoding is
        ``connection``'s packer's."""
        bulks = key_bulks(keys, connection)
        packed = [steady.removesuffix(EXEC)]
        packed += [command(name, bulks[key], *args) for name, key, *args in self.upkeep]
        return b"".join(packed)


def plan(fact: Fact, known: Opened, timestamp: float, clock: Reading, now: float) -> Opening | None:
    """The opening transaction's part for an increment at ``timestamp`` of the counter ``fact``
    whose latest written slices are ``known`` (at monotonic instant ``now``), or ``None`` when
    only the script can write it."""
    samples, precisions = fact[2], fact[3]
    second = math.floor(timestamp)
    starts = tuple([second - second % precision for precision in precisions])
    earliest, latest = clock.earliest(now), clock.latest(now)
    if max(starts) > earliest:
        return None  # maybe not reached by the Redis clock yet: the script caps the head
    upkeep: list[tuple[Any, ...]] = []
    heads: list[bytes] = []
    opens: list[bool] = []
    alive = list(known.alive)
    longest = 0
    for i, (precision, old, new) in enumerate(zip(precisions, known.starts, starts, strict=True)):
        window = samples * precision
        if new <= (latest // precision) * precision - window:
            return None  # maybe past the window of a head another writer moved
        if new == old:
            opens.append(False)
            continue
        if new < old or new - old > OPEN_GAP * precision:
            return None
        fallen = range(old - window + precision, new - window + precision, precision)
        upkeep.append((b"HDEL", i, *(b"%d" % start for start in fallen)))
        ttl = 2 * (samples + 1) * precision
        if alive[i] - now < ttl / 2:  # as the script: refreshed once half of it has passed
            upkeep.append((b"PEXPIRE", i, b"%d" % (ttl * 1000)))
            alive[i] = now + ttl
            longest = max(longest, ttl)
        else:  # a hash made again here (deleted, evicted) gets its TTL; else nothing changes
            upkeep.append((b"PEXPIRE", i, b"%d" % (ttl * 1000), b"NX"))
        heads += [b"h:%d" % precision, b"%d" % new]
        opens.append(True)
    if not heads:
        return None  # nothing opens: the steady transaction's case
    meta = len(precisions)
    upkeep.append((b"HSET", meta, *heads))
    if longest:
        upkeep.append((b"PEXPIRE", meta, b"%d" % (longest * 1000), b"GT"))
    return Opening(starts, tuple(opens), tuple(upkeep), tuple(alive))
