"""A Batch folds the increments of one counter queued one after another into one script call in
its general form (counter/plan.py's ``IncrementRun``, core/batch.py's ``FoldedCall``): the same
slices, heads and totals as one call per increment, hashes kept compact, one result per write,
and a refusal still refuses only the write it concerns."""

from __future__ import annotations

import pytest

from django_redis_metrics import Counter, MetricsRefused
from django_redis_metrics.core.batch import Batch

from .test_counter_fast import general_incr, state

T0 = 1_700_000_040  # a fixed epoch second, a multiple of 60, far behind any clock


@pytest.mark.parametrize("samples", [10, 120])
def test_a_batch_of_one_counter_is_folded_and_writes_the_same(backend, samples):
    folded = Counter("folded", precisions=[1, 5, 60], samples=samples)
    reference = Counter("one-by-one", precisions=[1, 5, 60], samples=samples)
    writes = [(T0 + second // 2, 1 + second % 3) for second in range(600)]
    backend.client.config_resetstat()
    with Batch() as batch:
        for when, count in writes:
            folded.incr(count, when=when, batch=batch)
    assert len(batch.results) == len(writes) and set(batch.results) == {None}
    if not backend.cluster:  # one node's commandstats
        stats = backend.client.info("commandstats")["cmdstat_evalsha"]
        scripts = stats["calls"] - stats["failed_calls"]  # not the first one, NOSCRIPT
        block = max(1, 128 - samples)  # finest slices per call: the hash stays compact
        assert scripts <= 300 // block + 2
    for when, count in writes:
        general_incr(reference, count, when)
    assert state(backend, folded) == state(backend, reference)
    assert folded.lifetime_total() == sum(count for _, count in writes)
    if samples < 128:
        for precision in (1, 5, 60):
            encoding = backend.client.object("encoding", folded.key(precision))
            assert encoding in (b"listpack", "listpack")


def test_writes_of_other_metrics_between_are_not_folded_over(backend):
    one, other = Counter("one", precisions=[1]), Counter("other", precisions=[1])
    with Batch() as batch:
        one.incr(when=T0, batch=batch)
        other.incr(when=T0, batch=batch)
        one.incr(when=T0 + 1, batch=batch)
        one.incr(when=T0 + 2, batch=batch)
    assert len(batch.calls) == 0 and len(batch.results) == 4
    assert one.series(1) == [(T0, 1), (T0 + 1, 1), (T0 + 2, 1)]
    assert other.series(1) == [(T0, 1)]


def test_a_refused_write_refuses_only_itself(backend):
    """The folded call is refused as a whole (a slice that would overflow), then its writes go
    one by one: the others are stored, the refused one only is reported."""
    counter = Counter("partly", precisions=[1, 60], samples=10)
    base = T0 // 118 * 118 + 1  # three seconds in one block of 118 (folded together)
    backend.client.hset(counter.key(1), base + 1, 2**63 - 10)
    batch = Batch()
    counter.incr(2, when=base, batch=batch)
    counter.incr(20, when=base + 1, batch=batch)  # refused: its 1 s slice would overflow
    counter.incr(4, when=base + 2, batch=batch)
    with pytest.raises(MetricsRefused, match="would overflow"):
        batch.execute()
    assert batch.sent and len(batch.errors) == 1 and len(batch.results) == 3
    assert counter.lifetime_total() == 6
    assert counter.series(1) == [(base, 2), (base + 1, 2**63 - 10), (base + 2, 4)]
    assert sum(count for _, count in counter.series(60)) == 6


def test_the_senders_batches_keep_one_call_per_write(backend):
    """A batch with ``joins=False`` (the sender's: each call is numbered and may be sent again
    alone) queues one call per increment; reading ``calls`` closes a batch's open run."""
    counter = Counter("unjoined", precisions=[1])
    joined, alone = Batch(), Batch(joins=False)
    for batch in (joined, alone):
        for second in range(3):
            counter.incr(when=T0 + second, batch=batch)
    assert len(joined.calls) == 1 and len(alone.calls) == 3
    assert joined.open_run is None
    joined.execute()
    alone.execute()
    assert joined.results == alone.results == [None] * 3
    assert counter.series(1)[-3:] == [(T0 + second, 2) for second in range(3)]
