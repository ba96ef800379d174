"""The Redis server's clock as this process estimates it, for writes that skip a script.

A write script reads the Redis clock (``TIME``) to refuse what is stamped too far ahead and to
cap a metric's retention head at the present. A transaction cannot read it before writing, so a
fast path that would open a slice decides on the client's side, with bounds it can prove: one
``TIME`` per connection pool (in a one-line script, which also tells the server's version),
read at most every :data:`READING_SECONDS`, brackets the server's
clock between the monotonic instants the request left and the reply came back. Until the next
reading, the server's clock lies in ``[seconds + (now - received), seconds + (now - sent)]``,
widened by :data:`SLACK` for the drift of two clocks over a minute. The caller's own wall clock
plays no part: a process whose clock jumps is judged by Redis' clock, as the script judges it.

Only for plain single-node clients (the fast paths run nowhere else). A server that answers
with an error, or a connection that fails, gives no reading (and is not asked again for a
minute): the caller sends its script.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from redis.exceptions import RedisError

#: Longest a reading serves, in seconds.
READING_SECONDS = 60.0
#: Seconds added on either side of a reading's bounds: two clocks drift apart by well under a
#: millisecond a minute; the rest is margin.
SLACK = 0.005


@dataclass(frozen=True, slots=True)
class Reading:
    """One ``TIME`` reply and when (``time.monotonic``) its request left and its reply came."""

    seconds: float
    sent: float
    received: float
    #: Whether the server takes ``PEXPIRE``'s ``GT`` option (Redis 7.0 and later).
    expire_gt: bool

    def earliest(self, now: float) -> float:
        """The least the server's clock can read at monotonic instant ``now``."""
        return self.seconds + (now - self.received) - SLACK

    def latest(self, now: float) -> float:
        """The most the server's clock can read at monotonic instant ``now``."""
        return self.seconds + (now - self.sent) + SLACK


#: The reading itself: the Redis clock and version in one call, with the commands the app's ACL
#: user has (``+eval +time``; ``INFO`` is not among them). ``REDIS_VERSION_NUM`` is 7.0's.
READ_SCRIPT = "local t = redis.call('TIME') return {t[1], t[2], redis.REDIS_VERSION_NUM or 0}"
#: ``REDIS_VERSION_NUM`` of Redis 7.0, the first with ``PEXPIRE ... GT``.
REDIS_7 = 0x070000

#: Per connection pool: its latest reading, or when reading last failed (``None``: no
#: reading is tried again until :data:`READING_SECONDS` passed).
_readings: WeakKeyDictionary[Any, Reading | float] = WeakKeyDictionary()


def cached(client: Any) -> Reading | None:
    """``client``'s reading while it serves, else ``None`` (no round trip)."""
    found = _readings.get(client.connection_pool)
    if type(found) is not Reading or time.monotonic() - found.received > READING_SECONDS:
        return None
    return found


def _due(client: Any) -> bool:
    """Whether a reading of ``client`` is worth a round trip: none serves, and none failed in
    the last :data:`READING_SECONDS`."""
    found = _readings.get(client.connection_pool)
    if found is None:
        return True
    at = found.received if isinstance(found, Reading) else found
    return time.monotonic() - at > READING_SECONDS


def reading(client: Any) -> Reading | None:
    """``client``'s reading, read again (one script call) when it no longer serves; ``None`` if
    Redis would not tell (then not asked again for :data:`READING_SECONDS`)."""
    found = cached(client)
    if found is not None or not _due(client):
        return found
    sent = time.monotonic()
    try:
        reply = client.eval(READ_SCRIPT, 0)
    except RedisError:
        _readings[client.connection_pool] = time.monotonic()
        return None
    return _read(client, reply, sent)


async def areading(client: Any) -> Reading | None:
    """:func:`reading` on an async client."""
    found = cached(client)
    if found is not None or not _due(client):
        return found
    sent = time.monotonic()
    try:
        reply = await client.eval(READ_SCRIPT, 0)
    except RedisError:
        _readings[client.connection_pool] = time.monotonic()
        return None
    return _read(client, reply, sent)


def _read(client: Any, reply: Any, sent: float) -> Reading:
    received = time.monotonic()
    seconds = int(reply[0]) + int(reply[1]) / 1e6
    found = _readings[client.connection_pool] = Reading(
        seconds, sent, received, int(reply[2]) >= REDIS_7
    )
    return found


def forget() -> None:
    """Forget every reading (tests)."""
    _readings.clear()
