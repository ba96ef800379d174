"""Redis Cluster failover: the master of a metric's slot is killed; once a replica is promoted,
the writes held meanwhile and those that follow are stored, each exactly once."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from django_redis_metrics import Counter
from django_redis_metrics.core.connection import fail_fast_connection
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


def hit() -> None:
    writes = Writes()
    writes.incr("hits")
    assert sender.submit(writes)


def test_each_master_has_a_replica(on_replicated: RedisClusterServers) -> None:
    assert len(on_replicated.nodes) == 6
    roles = [node.client().info("replication")["role"] for node in on_replicated.nodes]
    assert sorted(roles) == ["master"] * 3 + ["slave"] * 3


def test_metrics_flow_again_after_the_master_of_their_slot_is_killed(
    on_replicated: RedisClusterServers,
) -> None:
    hit()
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
    # the replica (Redis Cluster's own limit). Wait for it, so any loss below is the sender's.
    assert dead.client().execute_command("WAIT", 1, 5000) == 1
    dead.kill()
    watcher.start()
    sent = 0
    while not promoted.is_set() and watcher.is_alive():  # requests keep coming meanwhile
        hit()
        sent += 1
        time.sleep(0.02)
    watcher.join()
    assert promoted.is_set(), "the cluster did not fail over"
    assert sender.sender.failures >= 1  # the sender did meet the dead master
    for _ in range(10):
        hit()
    assert sender.flush()
    new_master = on_replicated.master_of(Counter("hits").meta_key)
    assert new_master is not dead
    assert Counter("hits").total(86400) == 1 + sent + 10
    # The fail-open client follows the new map: its node for the slot is the promoted one.
    client: Any = fail_fast_connection()
    node = client.get_node_from_key(Counter("hits").meta_key)
    assert node.port == new_master.port
