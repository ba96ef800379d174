"""``Counter(name, shards=N)``: increments spread over N shards (N keys on N Redis Cluster
slots), every read the sum, exact under racing writers."""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable

import pytest

from django_redis_metrics import Batch, Counter
from django_redis_metrics.core.shards import MAX_SHARDS, SHARD_LABEL, shards_of
from django_redis_metrics.counter.cleaner import clean_counters

from ..asyncio_helpers import run
from ..racing import race

T0 = 1_700_000_000
PRECISIONS = [1, 60, 3600]


def _feed(counter: Counter, increments: list[tuple[int, int]]) -> None:
    for when, count in increments:
        counter.incr(count, when=when)


INCREMENTS = [(T0 + (i * 7) % 300, 1 + i % 5) for i in range(200)]


def test_reads_equal_an_unsharded_counter_fed_the_same(backend):
    sharded = Counter("hot", precisions=PRECISIONS, samples=400, shards=3)
    plain = Counter("cold", precisions=PRECISIONS, samples=400)
    _feed(sharded, INCREMENTS)
    _feed(plain, INCREMENTS)
    used = {s.name for s in shards_of(sharded) if s.exists()}
    assert len(used) == 3  # 200 writes over 3 shards: each got some
    for precision in PRECISIONS:
        assert sharded.series(precision) == plain.series(precision)
        assert sharded.recent(precision, 20, until=T0 + 300) == plain.recent(
            precision, 20, until=T0 + 300
        )
        assert sharded.total(precision) == plain.total(precision) == 600
    assert sharded.lifetime_total() == plain.lifetime_total() == 600
    assert run(lambda: sharded.atotal(60)) == 600
    assert run(lambda: sharded.aseries(1)) == plain.series(1)
    # A reader that does not know the shards (built from the catalogue) sees the sum too.
    assert Counter("hot", precisions=PRECISIONS, samples=400).total(60) == 600


def test_every_write_path_reaches_a_shard(backend):
    counter = Counter("paths", precisions=[60], shards=4)
    counter.incr(2, when=T0)
    with Batch() as batch:
        counter.incr(3, when=T0, batch=batch)
    assert counter.incr_many([(T0, 5), (T0 + 60, 7)]) == 1
    run(lambda: counter.aincr(11, when=T0))
    run(lambda: counter.aincr_many([(T0, 13)]))
    assert counter.series(60) == [(T0 // 60 * 60, 34), (T0 // 60 * 60 + 60, 7)]
    assert counter.lifetime_total() == 41
    # Nothing under the counter's own name: every key belongs to a shard.
    assert not counter.exists()


def test_shards_sit_on_their_own_slots(cluster):
    counter = Counter("spread", precisions=[60], shards=8)
    slots = {cluster.client.cluster_keyslot(shard.meta_key) for shard in shards_of(counter)}
    assert len(slots) == 8
    assert cluster.client.cluster_keyslot(counter.meta_key) not in slots


def test_racing_writers_lose_nothing(backend):
    """Threads write one sharded counter at once (on the cluster, across slots and nodes)
    while the cleaner passes again and again over its shards: every increment counted."""
    counter = Counter("raced", precisions=[1, 60], samples=120, shards=5)
    per_writer = 150

    def writer(seed: int) -> Callable[[], None]:
        def write() -> None:
            for i in range(per_writer):
                counter.incr(1 + (seed + i) % 3, when=T0 + i % 60)

        return write

    race([writer(n) for n in range(6)], lambda: clean_counters(now=T0 + 30))
    expected = sum(1 + (n + i) % 3 for n in range(6) for i in range(per_writer))
    assert counter.total(60) == expected
    assert counter.lifetime_total() == expected
    assert sum(count for _, count in counter.series(1)) == expected
    assert counter.series(60) == Counter("raced", precisions=[1, 60], samples=120).series(60)


def test_a_write_is_one_round_trip(backend, round_trips):
    counter = Counter("one", precisions=[60], shards=6)
    _feed(counter, [(T0, 1)] * 60)  # every shard written: scripts loaded, shards listed
    assert round_trips.measure(lambda: _feed(counter, [(T0, 1)] * 20)) == 20


def test_a_read_is_one_round_trip_on_a_single_node(single, round_trips):
    counter = Counter("trips", precisions=[60], shards=6)
    _feed(counter, [(T0, 1)] * 30)
    counter.total(60)  # scripts loaded
    assert round_trips.measure(lambda: counter.total(60)) == 1
    assert round_trips.measure(counter.lifetime_total) == 1
    assert round_trips.measure(lambda: counter.incr(when=T0)) == 1


def test_fewer_shards_declared_later_still_reads_every_shard(backend):
    Counter("shrunk", precisions=[60], shards=8).incr_many([(T0, 1)] * 1)
    wide = Counter("shrunk", precisions=[60], shards=8)
    _feed(wide, [(T0, 1)] * 40)
    assert Counter("shrunk", precisions=[60], shards=2).total(60) == 41
    assert Counter("shrunk", precisions=[60]).total(60) == 41


def test_querysets_add_the_shards(backend):
    counter = Counter("q", precisions=[60], shards=3)
    _feed(counter, [(T0, 2)] * 30)
    assert Counter.objects.filter(name="q").total(60) == 60
    assert sum(row.total(60) for row in Counter.objects.filter(name="q")) == 60
    # The metric by its name (the admin's detail page): the counter itself, its shards added.
    found = Counter.objects.get("q")
    assert found.family is None and found.total(60) == 60 and found.lifetime_total() == 60


def test_delete_removes_every_shard(backend):
    counter = Counter("gone", precisions=[60], shards=3)
    _feed(counter, [(T0, 1)] * 30)
    counter.delete()
    assert counter.total(60) == 0
    assert [key for key in backend.keys() if "gone" in key] == []


@pytest.mark.parametrize(
    ("shards", "error", "message"),
    [
        (0, ValueError, "shards of counter 'x' must be positive, not 0"),
        (MAX_SHARDS + 1, ValueError, f"must be at most {MAX_SHARDS}, not {MAX_SHARDS + 1}"),
        ("3", TypeError, "shards of counter 'x' must be an int"),
        (True, TypeError, "shards of counter 'x' must be an int"),
        (2.0, TypeError, "shards of counter 'x' must be an int"),
    ],
)
def test_bad_shards_are_refused(backend, shards, error, message):
    with pytest.raises(error, match=message):
        Counter("x", shards=shards)
    assert backend.keys() == []


def test_labels_and_shards_are_refused_together(backend):
    with pytest.raises(ValueError, match=r"labelled by \('view',\): .* cannot also declare"):
        Counter("x", labels=("view",), shards=2)
    assert Counter("x", labels=("view",), shards=1).shards == 1
    with pytest.raises(ValueError, match="reserved"):
        Counter("x", labels=(SHARD_LABEL,))


def test_writes_spread_over_the_shards(single):
    counter = Counter("even", precisions=[60], shards=4)
    _feed(counter, [(T0, 1)] * 400)
    spread = Tally({shard.name: shard.lifetime_total() for shard in shards_of(counter)})
    assert sum(spread.values()) == 400
    assert min(spread.values()) > 50  # about 100 each; 50 is beyond 5 standard deviations


def test_deferred_increments_of_a_process_merge_into_one_shard(backend, fresh_state):
    """The sender adds up a process's increments: they all go to this process's shard, so a
    flush is one write, not one per shard."""
    from django_redis_metrics.sending import sender

    counter = Counter("deferred", precisions=[60], shards=8)
    for _ in range(50):
        counter.incr(defer=True)
    assert sender.flush(timeout=10)
    assert counter.lifetime_total() == 50
    assert [s.lifetime_total() for s in shards_of(counter)].count(50) == 1
