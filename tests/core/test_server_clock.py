"""The Redis clock as a process estimates it (core/server_clock.py): bounds that hold against
the server's own ``TIME``, one script call a minute per pool, and a refused reading not asked
for again on every write."""

from __future__ import annotations

import time
from typing import Any

import redis

from django_redis_metrics.core import server_clock

from ..asyncio_helpers import run
from ..roundtrips import RoundTrips


def redis_time(client: Any) -> float:
    seconds, micros = client.time()
    return float(seconds + micros / 1e6)


def test_the_bounds_hold_the_servers_clock_between_them(single):
    client = redis.Redis.from_url(single.url)
    reading = server_clock.reading(client)
    assert reading is not None and reading.expire_gt  # the suite's Redis is 7
    time.sleep(0.05)
    before = reading.earliest(time.monotonic())
    now = redis_time(client)
    after = reading.latest(time.monotonic())
    assert before <= now <= after
    # The bounds lie the reading's round trip and twice the slack apart: well under half a
    # second, even when a loaded machine holds a loopback reply for tens of milliseconds.
    assert after - before < 0.5


def test_a_reading_serves_a_minute_then_is_read_again(single, monkeypatch):
    client = redis.Redis.from_url(single.url)
    client.ping()  # connected: its handshake is not counted
    trips = RoundTrips(monkeypatch)
    assert trips.measure(lambda: server_clock.reading(client)) == 1
    assert trips.measure(lambda: server_clock.reading(client)) == 0
    monkeypatch.setattr(server_clock, "READING_SECONDS", 0.0)
    assert trips.measure(lambda: server_clock.reading(client)) == 1


def test_a_refused_reading_is_not_asked_again_for_a_minute(single, monkeypatch):
    """A user without ``EVAL`` gets no reading (its writes go by the script, which it may not
    run either: the refusal is theirs to raise), and costs no round trip per write."""
    admin = single.client
    admin.acl_setuser(
        "no_eval",
        reset=True,
        enabled=True,
        passwords=["+pw"],
        keys=["*"],
        categories=["-@all", "+@read", "+@connection"],
    )
    client = redis.Redis.from_url(single.url.replace("redis://", "redis://no_eval:pw@", 1))
    try:
        client.ping()
        trips = RoundTrips(monkeypatch)
        assert server_clock.reading(client) is None
        assert trips.measure(lambda: server_clock.reading(client)) == 0
        monkeypatch.setattr(server_clock, "READING_SECONDS", 0.0)
        assert trips.measure(lambda: server_clock.reading(client)) == 1
    finally:
        client.close()
        admin.acl_deluser("no_eval")


def test_an_async_reading_is_the_same(single):
    async def main() -> tuple[Any, float]:
        client = redis.asyncio.Redis.from_url(single.url)
        try:
            reading = await server_clock.areading(client)
            seconds, micros = await client.time()
            return reading, seconds + micros / 1e6
        finally:
            await client.aclose()

    reading, now = run(main)
    assert reading is not None and reading.expire_gt
    assert reading.seconds <= now
