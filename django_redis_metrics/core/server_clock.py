"""The Redis server's clock as this process estimates it, for writes that skip a script.

A write script reads the Redis clock (``TIME``) to refuse what is stamped too far ahead and to
cap a metric's retention head at the present. A transaction cannot read it before writing, so a
fast path that would open a slice decides on the client's side, with bounds it can prove: one
``TIME`` per connection pool, read at most every :data:`READING_SECONDS`, brackets the server's
clock between the monotonic instants the request left and the reply came back. Until the next
reading, the server's clock lies in ``[seconds + (now - received), seconds + (now - sent)]``,
widened by :data:`SLACK` for the drift of two clocks over a minute. The caller's own wall clock
plays no part: a process whose clock jumps is judged by Redis' clock, as the script judges it.

Only for plain single-node clients (the fast paths run nowhere else). A server that answers
``TIME`` with an error, or a connection that fails, gives no reading: the caller sends its script.
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


#: Per connection pool: its latest reading.
_readings: WeakKeyDictionary[Any, Reading] = WeakKeyDictionary()
#: Per connection pool: whether its server takes ``PEXPIRE ... GT`` (read once).
_expire_gt: WeakKeyDictionary[Any, bool] = WeakKeyDictionary()


def cached(client: Any) -> Reading | None:
    """``client``'s reading while it serves, else ``None`` (no round trip)."""
    found = _readings.get(client.connection_pool)
    if found is None or time.monotonic() - found.received > READING_SECONDS:
        return None
    return found


def reading(client: Any) -> Reading | None:
    """``client``'s reading, read again (one ``TIME``, and once per pool ``INFO server``) when
    it no longer serves; ``None`` if Redis would not tell."""
    found = cached(client)
    if found is not None:
        return found
    pool = client.connection_pool
    try:
        gt = _expire_gt.get(pool)
        if gt is None:
            gt = _expire_gt[pool] = _takes_gt(client.info("server"))
        sent = time.monotonic()
        seconds, micros = client.time()
        received = time.monotonic()
    except RedisError:
        return None
    found = _readings[pool] = Reading(seconds + micros / 1e6, sent, received, gt)
    return found


async def areading(client: Any) -> Reading | None:
    """:func:`reading` on an async client."""
    found = cached(client)
    if found is not None:
        return found
    pool = client.connection_pool
    try:
        gt = _expire_gt.get(pool)
        if gt is None:
            gt = _expire_gt[pool] = _takes_gt(await client.info("server"))
        sent = time.monotonic()
        seconds, micros = await client.time()
        received = time.monotonic()
    except RedisError:
        return None
    found = _readings[pool] = Reading(seconds + micros / 1e6, sent, received, gt)
    return found


def _takes_gt(info: Any) -> bool:
    version = str(info.get("redis_version", "0"))
    major = version.split(".", 1)[0]
    return major.isdigit() and int(major) >= 7


def forget() -> None:
    """Forget every reading (tests)."""
    _readings.clear()
