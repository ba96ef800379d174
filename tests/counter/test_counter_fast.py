"""The transaction fast path of one increment (counter/fast.py): taken for the slices a script
call of this process opened, on a plain single node, and keeping every guarantee of the
script: a key found missing or a slice found trimmed is repaired (TTL, head, meta, listing),
racing writers add up exactly, a write too far ahead is still refused with nothing written."""

from __future__ import annotations

import random
import time
from functools import partial
from typing import Any

import pytest

from django_redis_metrics import Counter, MetricsRefused
from django_redis_metrics.core.batch import Batch, run_calls
from django_redis_metrics.core.connection import get_redis_connection
from django_redis_metrics.core.keys import catalogue_key
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.counter import fast
from django_redis_metrics.counter.cleaner import clean_counters
from django_redis_metrics.counter.keys import KIND

from ..racing import race
from ..roundtrips import RoundTrips

T0 = 1_700_000_040  # a fixed epoch second, a multiple of 60, far behind any clock
PRECISIONS = [1, 60, 3600]


def general_incr(counter: Counter, count: int, when: float) -> None:
    """One increment in the script's general form (never the fast path, never recorded)."""
    slices = {p: {int(when // p) * p: count} for p in counter.precisions}
    client = get_redis_connection()
    run_calls(client, [counter._incr_call(slices, client, count)])


def calls(backend: Any) -> dict[str, int]:
    stats = backend.client.info("commandstats")
    return {name.removeprefix("cmdstat_"): value["calls"] for name, value in stats.items()}


def state(backend: Any, counter: Counter) -> dict[str, object]:
    """A counter's slices and meta hash, bar expiry times."""
    meta = {
        k.decode(): v.decode()
        for k, v in backend.client.hgetall(counter.meta_key).items()
        if not k.startswith(b"e:")
    }
    return {"meta": meta, **{str(p): counter.series(p) for p in counter.precisions}}


def test_increments_of_opened_slices_are_one_transaction_each(single, monkeypatch):
    counter = Counter("steady", precisions=PRECISIONS)
    counter.incr(when=T0)  # the script opens the slices
    trips = RoundTrips(monkeypatch)
    single.client.config_resetstat()
    assert sum(trips.measure(lambda: counter.incr(2, when=T0 + 0.5)) for _ in range(10)) == 10
    stats = calls(single)
    assert "evalsha" not in stats and "eval" not in stats
    assert stats["exec"] == 10 and "exists" not in stats
    assert stats["hincrby"] == 10 * (len(PRECISIONS) + 1)  # each precision and the total
    assert counter.series(1) == [(T0, 21)] and counter.series(3600) == [(T0 // 3600 * 3600, 21)]
    assert counter.lifetime_total() == 21
    single.client.config_resetstat()
    counter.incr(when=T0 + 1)  # a slice this process has not seen opened: the script
    counter.incr(when=T0 + 1)  # now seen: the transaction
    stats = calls(single)
    assert stats["evalsha"] == 1 and stats["exec"] == 1
    assert counter.series(1) == [(T0, 21), (T0 + 1, 2)]


def test_only_a_plain_single_write_takes_it(backend):
    """On a cluster, in a batch or at a new slice the script runs; what it writes is the same."""
    counter = Counter("plain", precisions=PRECISIONS)
    counter.incr(when=T0)
    backend.client.config_resetstat()
    with Batch() as batch:
        counter.incr(when=T0, batch=batch)
    counter.incr(when=T0)
    stats = calls(backend)
    if backend.cluster:
        assert "exec" not in stats
    else:
        assert stats["exec"] == 1  # the direct write only
    assert counter.series(1) == [(T0, 3)] and counter.lifetime_total() == 3


@pytest.mark.parametrize("lost", ["slice key", "meta hash", "everything"])
def test_a_missing_key_is_repaired_with_its_ttl(single, lost):
    counter = Counter("evicted", precisions=PRECISIONS, samples=10)
    reference = Counter("reference", precisions=PRECISIONS, samples=10)
    counter.incr(3, when=T0)
    lost_keys = {
        "slice key": [counter.key(1)],
        "meta hash": [counter.meta_key],
        "everything": [counter.meta_key, *(counter.key(p) for p in PRECISIONS)],
    }[lost]
    single.client.delete(*lost_keys)
    if counter.meta_key in lost_keys:  # as the cleaner retires a counter: unlisted too
        single.client.zrem(catalogue_key(KIND), counter.name)
    counter.incr(2, when=T0 + 0.5)  # the transaction finds a key missing: the repair follows
    # What the script alone leaves when only the lost keys' writes remain.
    if lost == "slice key":
        general_incr(reference, 3, T0)
        single.client.delete(reference.key(1))
    elif lost == "meta hash":
        general_incr(reference, 3, T0)
        single.client.delete(reference.meta_key)
    general_incr(reference, 2, T0 + 0.5)
    got, expected = state(single, counter), state(single, reference)
    for precision in PRECISIONS:
        assert got[str(precision)] == expected[str(precision)]
    for precision in PRECISIONS:  # every slice key and the meta hash expire again
        assert 0 < single.client.pttl(counter.key(precision)) <= 2 * 11 * precision * 1000
        assert got["meta"][f"h:{precision}"] == str(T0 // precision * precision)
        assert got["meta"][str(precision)] == "10"
    assert single.client.pttl(counter.meta_key) > 0
    assert single.client.zscore(catalogue_key(KIND), counter.name) is not None
    assert got["meta"]["listed"] == "1"
    assert counter.lifetime_total() == (2 if lost != "slice key" else 5)


def test_a_slice_trimmed_by_a_later_write_elsewhere_is_trimmed_again(single):
    """Another process moves the head past this process's slice (its trim deletes it): the
    transaction makes it again, the repair finds it outside the window and deletes it, as the
    script does for a write that old; the lifetime total keeps the increment, as it does."""
    counter = Counter("moved", precisions=[1, 60], samples=5)
    reference = Counter("moved-ref", precisions=[1, 60], samples=5)
    counter.incr(when=T0)
    general_incr(counter, 1, T0 + 30)  # the head moves 30 s on: the slice T0 falls out
    assert counter.series(1) == [(T0 + 30, 1)]
    counter.incr(4, when=T0)  # taken as a transaction, then repaired
    for count, when in ((1, T0), (1, T0 + 30), (4, T0)):
        general_incr(reference, count, when)
    assert state(single, counter) == state(single, reference)
    assert counter.series(1) == [(T0 + 30, 1)] and counter.lifetime_total() == 6


def test_refusals_write_nothing(single):
    counter = Counter("refusals", precisions=PRECISIONS)
    now = time.time()
    counter.incr(when=now)
    before = {key: single.client.dump(key) for key in single.keys()}
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        counter.incr(when=now + MAX_AHEAD + 3600)
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        counter.incr(when=now + MAX_AHEAD + 3600)  # never recorded: the script again
    single.client.hset(counter.key(3600), int(now) // 3600 * 3600, 2**63 - 10)
    before = {key: single.client.dump(key) for key in single.keys()}
    with pytest.raises(MetricsRefused, match="would overflow"):
        counter.incr(20, when=now)  # the transaction meets the error: taken back, then refused
    assert {key: single.client.dump(key) for key in single.keys()} == before


def test_a_key_of_another_type_raises_the_scripts_error_with_nothing_written(single):
    counter = Counter("clash", precisions=[1, 60])
    counter.incr(when=T0)
    single.client.delete(counter.key(60))
    single.client.set(counter.key(60), "a string")
    before = {key: single.client.dump(key) for key in single.keys()}
    with pytest.raises(Exception, match="WRONGTYPE"):
        counter.incr(when=T0)
    assert {key: single.client.dump(key) for key in single.keys()} == before


def test_racing_writers_and_cleaner_add_up_exactly(single):
    """Four writers, most increments on the transaction, through 200 seconds (beyond the 20
    samples) while the cleaner passes again and again: the lifetime total and the newest slices
    are exactly what they added."""
    precisions, samples, span, writers = (1, 60), 20, 200, 4
    counts = {seed: random.Random(seed).choices(range(1, 10), k=span) for seed in range(writers)}

    def write(seed: int) -> None:
        counter = Counter("racing", precisions, samples)
        for second, count in enumerate(counts[seed]):
            for _ in range(3):  # the first may run the script, the others the transaction
                counter.incr(count, when=T0 + second)

    race([partial(write, seed) for seed in range(writers)], partial(clean_counters, now=T0 + span))
    counter = Counter("racing", precisions, samples)
    assert counter.lifetime_total() == 3 * sum(sum(values) for values in counts.values())
    per_second = [3 * sum(counts[seed][s] for seed in range(writers)) for s in range(span)]
    newest = range(span - samples + 1, span)  # the oldest kept is the cleaner's to trim
    assert counter.series(1)[-len(newest) :] == [(T0 + s, per_second[s]) for s in newest]


def test_a_forgotten_process_state_only_costs_a_script_call(single):
    counter = Counter("forgot", precisions=PRECISIONS)
    counter.incr(when=T0)
    fast.forget_all()
    single.client.config_resetstat()
    counter.incr(when=T0)
    assert calls(single)["evalsha"] == 1
    assert counter.lifetime_total() == 2


def test_a_meta_hash_of_another_type_raises_with_nothing_written(single):
    """The transaction's HINCRBY of the lifetime total fails: the slices' increments are taken
    back, and the script refuses the write as it always did."""
    counter = Counter("meta-clash", precisions=[1, 60])
    counter.incr(when=T0)
    single.client.delete(counter.meta_key)
    single.client.set(counter.meta_key, "a string")
    before = {key: single.client.dump(key) for key in single.keys()}
    with pytest.raises(Exception, match="WRONGTYPE"):
        counter.incr(when=T0)
    assert {key: single.client.dump(key) for key in single.keys()} == before
