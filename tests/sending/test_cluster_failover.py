"""Redis Cluster failover: the master of a metric's slot is killed; once a replica is promoted,
the writes held meanwhile and those that follow are stored, each exactly once, and at once
rather than after the sender's backoff."""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from redis.cluster import RedisCluster

from django_redis_metrics import Counter
from django_redis_metrics.core.connection import REDIS_ERRORS, fail_fast_connection, using_client
from django_redis_metrics.sending import sender
from django_redis_metrics.sending.writes import Writes
from django_redis_metrics.testing import RedisClusterServers

#: A short node timeout, so the cluster fails over within a few seconds.
NODE_TIMEOUT_MS = 1000


@pytest.fixture(scope="module")
def replicated() -> Iterator[RedisClusterServers]:
    """A 3-master, 3-replica cluster of this module's own (its masters get killed)."""
    servers = RedisClusterServers(masters=3, replicas=1, node_timeout_ms=NODE_TIMEOUT_MS).start()
    yield servers
    servers.stop()


@pytest.fixture
def on_replicated(
    settings: Any, replicated: RedisClusterServers, fresh_state: None
) -> RedisClusterServers:
    settings.DJANGO_REDIS_METRICS = {
        # A replica: alive whichever master is killed (clients made later start from it).
        "CONNECTION": replicated.replicas[0].url,
        "CLUSTER": True,
        "PREFIX": "failover",
        "FAIL_OPEN_TIMEOUT": 0.2,
    }
    return replicated


def hit(name: str = "hits", tally: collections.Counter[int] | None = None) -> None:
    """One request's hit; ``tally`` counts it under its second (its 1 s slice)."""
    writes = Writes()
    writes.incr(name)
    now = time.time()
    assert sender.submit(writes, now)
    if tally is not None:
        tally[int(now)] += 1


def shortfall(counter: Counter, tally: collections.Counter[int]) -> dict[int, int]:
    """Per second, the hits sent minus those stored (1 s slices), where they differ: says
    which hit a failing run lost, before or after the kill."""
    stored = dict(counter.series(1))
    return {
        second: sent - stored.get(second, 0)
        for second, sent in sorted(tally.items())
        if stored.get(second, 0) != sent
    }


def test_each_master_has_a_replica(on_replicated: RedisClusterServers) -> None:
    assert len(on_replicated.nodes) == 6
    roles = [node.client().info("replication")["role"] for node in on_replicated.nodes]
    assert sorted(roles) == ["master"] * 3 + ["slave"] * 3


def test_metrics_flow_again_after_the_master_of_their_slot_is_killed(
    on_replicated: RedisClusterServers,
) -> None:
    tally: collections.Counter[int] = collections.Counter()
    hit(tally=tally)
    assert sender.flush()
    dead = on_replicated.master_of(Counter("hits").meta_key)
    promoted = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + 30
        while not promoted.is_set() and time.monotonic() < deadline:
            try:
                if on_replicated.failed_over(dead):
                    promoted.set()
            except Exception:  # a node may be busy electing: ask again
                pass
            time.sleep(0.05)

    watcher = threading.Thread(target=watch)
    # Replication is asynchronous: a write acknowledged just before the kill may never reach
    # the replica (Redis Cluster's own limit). Wait until the replica applied it, so any loss
    # below is the sender's. Not WAIT on a connection of the test's own: having written
    # nothing, it may be answered at once (it is under redis-py 5.3), whatever the replica holds.
    assert dead.replicated() == 1
    dead.kill()
    killed_at = time.time()
    watcher.start()
    sent = 0
    while not promoted.is_set() and watcher.is_alive():  # requests keep coming meanwhile
        hit(tally=tally)
        sent += 1
        time.sleep(0.02)
    watcher.join()
    assert promoted.is_set(), "the cluster did not fail over"
    assert sender.sender.failures >= 1  # the sender did meet the dead master
    for _ in range(10):
        hit(tally=tally)
    assert sender.flush()
    new_master = on_replicated.master_of(Counter("hits").meta_key)
    assert new_master is not dead
    assert Counter("hits").total(86400) == 1 + sent + 10, (
        f"sent minus stored per second: {shortfall(Counter('hits'), tally)}; killed at "
        f"{killed_at:.3f}; sender: {sender.sender.failures} failures, "
        f"{sender.sender.duplicates} duplicates"
    )
    # The fail-open client follows the new map: its node for the slot is the promoted one.
    client: Any = fail_fast_connection()
    node = client.get_node_from_key(Counter("hits").meta_key)
    assert node.port == new_master.port


#: With retries this far apart, a sender that waited out its backoff would resume seconds
#: after the promotion.
LONG_BACKOFF = 12.0
#: How soon after the cluster reported the promotion every write must be stored: the watch
#: asks every SEND_RETRY_DELAY (0.1 s); the rest is a round trip or two and the polling, which
#: a loaded machine stretches (3.4 s seen in a CI run beside other jobs) but never to a backoff.
PROMPTLY = 4.0


def intact_counter(servers: RedisClusterServers) -> Counter:
    """A counter whose master is one of the cluster's first masters, alive, so its replica
    is there to be promoted (another test may have killed a master already)."""
    for index in range(100):
        counter = Counter(f"prompt{index}")
        master = servers.master_of(counter.meta_key)
        if master in servers.masters and master.process is not None:
            return counter
    raise AssertionError("no master left with a replica")


def test_a_held_batch_is_sent_once_a_replica_is_promoted_not_after_its_backoff(
    settings: Any, on_replicated: RedisClusterServers
) -> None:
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "SEND_RETRY_MAX_DELAY": LONG_BACKOFF,
    }
    counter = intact_counter(on_replicated)
    name = counter.name
    hit(name)
    assert sender.flush()
    dead = on_replicated.master_of(counter.meta_key)
    assert dead.replicated() == 1  # the first write too (see the test above)
    dead.kill()
    deadline = time.monotonic() + 30
    sent, promoted_at = 0, None
    # Requests keep coming while the cluster elects; no flush(), which would cut the wait short.
    while promoted_at is None and time.monotonic() < deadline:
        hit(name)
        sent += 1
        try:
            if on_replicated.failed_over(dead):
                promoted_at = time.monotonic()
        except REDIS_ERRORS:  # a node busy electing: ask again
            pass
        time.sleep(0.02)
    assert promoted_at is not None, "the cluster did not fail over"
    assert sender.sender.failures >= 1
    # A reader of its own, made now: it knows the new master (the sender's client must not
    # learn the new map from the test).
    reader = RedisCluster.from_url(on_replicated.replicas[0].url)
    stored_at = None
    try:
        with using_client(reader):
            while stored_at is None and time.monotonic() < promoted_at + 15:
                with contextlib.suppress(*REDIS_ERRORS):
                    if counter.total(86400) == 1 + sent:
                        stored_at = time.monotonic()
                time.sleep(0.02)
            assert stored_at is not None, "the writes held through the failover were not stored"
            assert stored_at - promoted_at <= PROMPTLY, (
                f"stored {stored_at - promoted_at:.2f} s after the promotion"
            )
            for _ in range(10):
                hit(name)
            assert sender.flush()
            assert counter.total(86400) == 1 + sent + 10  # nothing lost, nothing twice
    finally:
        reader.close()
