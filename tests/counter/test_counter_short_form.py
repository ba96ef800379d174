"""One increment is sent in the write script's short form (each precision's slice start, in key
order), every other write in its general form (pairs per precision). Both forms keep the same
layout and bookkeeping: keys written by one are read and written by the other (the general form
is what the previous release sent for every write), and racing writers lose nothing."""

from __future__ import annotations

import random
import threading
import time

import pytest

from django_redis_metrics import Counter, MetricsRefused
from django_redis_metrics.core.batch import run_calls
from django_redis_metrics.core.connection import get_redis_connection
from django_redis_metrics.core.retention import MAX_AHEAD

from ..racing import race

T0 = 1_700_000_000  # a fixed epoch second, far behind any clock
PRECISIONS = [1, 5, 60, 3600]


def general_incr(counter: Counter, count: int, when: float) -> None:
    """One increment as the general form sends it (the previous release's call for incr())."""
    slices = {p: {int(when // p) * p: count} for p in counter.precisions}
    client = get_redis_connection()
    run_calls(client, [counter._incr_call(slices, client, count)])


def state(backend, counter: Counter) -> dict[str, object]:
    """What a counter holds: its slices per precision and its meta hash bar expiry times (the
    server's clock in ms)."""
    client = backend.client
    meta = {
        k.decode(): v.decode()
        for k, v in client.hgetall(counter.meta_key).items()
        if not k.startswith(b"e:")
    }
    return {"meta": meta, **{str(p): counter.series(p) for p in counter.precisions}}


def test_one_increment_is_sent_short(backend):
    counter = Counter("short", precisions=PRECISIONS)
    call = counter._incr_one_call(3, T0 + 7.5, get_redis_connection())
    starts = [T0 + 7, T0 + 5, T0 // 60 * 60, T0 // 3600 * 3600]
    assert call.args[4:] == [3, "*", T0 + 7, *starts]
    assert call.keys[1:5] == [counter.key(p) for p in PRECISIONS]
    before_epoch = counter._incr_one_call(1, -1.5, get_redis_connection())
    assert before_epoch.args[6:] == [-2, -2, -5, -60, -3600]  # floored, not truncated


@pytest.mark.parametrize("seed", [1, 2])
def test_both_forms_write_the_same_and_continue_each_other(backend, seed):
    """The same increments, in random order (backfills and slices that fall out included), sent
    in the general form to one counter, in the short form to another, and alternating between
    the forms to a third (keys left by the previous release, written on by this one): the
    three hold the same slices, heads, samples and totals after every step."""
    rng = random.Random(seed)
    general = Counter(f"general{seed}", precisions=PRECISIONS, samples=8)
    short = Counter(f"short{seed}", precisions=PRECISIONS, samples=8)
    mixed = Counter(f"mixed{seed}", precisions=PRECISIONS, samples=8)
    for step in range(300):
        when = T0 + rng.uniform(0, 600) + step * 3
        count = rng.choice([1, 1, 2, 5, -1])
        general_incr(general, count, when)
        short.incr(count, when=when)
        if step % 2:
            general_incr(mixed, count, when)
        else:
            mixed.incr(count, when=when)
        if step % 50 == 0 or step == 299:
            expected = state(backend, general)
            assert state(backend, short) == expected
            assert state(backend, mixed) == expected
    assert short.lifetime_total() == general.lifetime_total() == mixed.lifetime_total()
    for precision in PRECISIONS:
        assert len(short.series(precision)) <= 8


def test_a_short_increment_past_the_clock_is_refused_before_any_write(backend):
    """Refused before its increments (the clock read first), so nothing is written, not even
    undone: every key as it was, the server's dirty counter unmoved; a late slice that exists
    already is only added to."""
    counter = Counter("refused", precisions=[1, 60, 3600])
    now = time.time()
    counter.incr(4, when=now)
    before = {k: backend.client.dump(k) for k in backend.keys()}
    writes = backend.client.info("persistence")["rdb_changes_since_last_save"]
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        counter.incr(2, when=now + MAX_AHEAD + 90)
    assert {k: backend.client.dump(k) for k in backend.keys()} == before
    if not backend.cluster:  # one server's counter (a cluster's is per node)
        assert backend.client.info("persistence")["rdb_changes_since_last_save"] == writes
    assert counter.lifetime_total() == 4
    late = now + MAX_AHEAD - 5
    counter.incr(1, when=late)
    counter.incr(1, when=late)  # the same slices: existing ones, only added to
    assert counter.lifetime_total() == 6


def test_racing_short_and_general_writers_are_exact(backend):
    """Threads writing the same counter in both forms, slices opening all the time, against a
    looping cleaner: every increment is counted once, and no precision outgrows its samples."""
    from django_redis_metrics.counter.cleaner import clean_counters

    counter = Counter("racing forms", precisions=[1, 5, 60], samples=120)
    base = int(time.time()) - 30  # within the window of every precision: nothing falls out

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(150):
            when = base + rng.randint(0, 25)
            if seed % 2:
                counter.incr(2, when=when)
            else:
                general_incr(counter, 2, when)

    race([lambda s=s: writer(s) for s in range(4)], lambda: clean_counters())
    assert counter.lifetime_total() == 4 * 150 * 2
    assert sum(c for _, c in counter.series(60)) == 4 * 150 * 2
    assert sum(c for _, c in counter.series(1)) == 4 * 150 * 2
    for precision in (1, 5, 60):
        assert len(counter.series(precision)) <= 120


def test_a_sparse_short_writer_keeps_each_hash_within_its_samples(backend):
    """Slices opened far apart (every write a new slice at every precision, the head jumping
    by more than one slice): the hashes never hold more than `samples` fields, no cleaner."""
    counter = Counter("sparse", precisions=[1, 5, 60], samples=6)
    rng = random.Random(5)
    when = T0
    for _ in range(200):
        when += rng.choice([1, 7, 61, 400, 3])
        counter.incr(when=when)
        for precision in (1, 5, 60):
            assert backend.client.hlen(counter.key(precision)) <= 6


def test_threads_see_no_partial_short_increment(backend):
    """A reader between writes never sees one precision counted without the others."""
    counter = Counter("whole", precisions=[1, 3600])
    stop = threading.Event()
    seen: list[tuple[int, int]] = []
    now = int(time.time())

    def read() -> None:
        client = backend.client
        while not stop.is_set():
            # One script reads both at one instant, on a single node and on a cluster alike
            # (the keys share the counter's slot; redis-py 5 has no cluster transactions).
            fine, coarse = client.eval(
                "return {redis.call('HGET', KEYS[1], ARGV[1]), "
                "redis.call('HGET', KEYS[2], ARGV[2])}",
                2,
                counter.key(1),
                counter.key(3600),
                now,
                now // 3600 * 3600,
            )
            seen.append((int(fine or 0), int(coarse or 0)))

    reader = threading.Thread(target=read)
    reader.start()
    for _ in range(300):
        counter.incr(when=now)
    stop.set()
    reader.join()
    assert all(fine == coarse for fine, coarse in seen)
