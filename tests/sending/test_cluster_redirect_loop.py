"""Redis Cluster nodes that disagree on who serves a slot, each redirecting (``MOVED``) to the
other, as during a failover or a resharding whose configuration has not settled: redis-py
gives up after its redirections with ``ClusterError("TTL exhausted.")``. That is the cluster
failing for now, not a refusal of the batch: the sender holds the batch and stores it, once,
when the nodes agree again. (Taken for a data error, the batch was logged and dropped.)"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from redis.exceptions import ClusterError

from django_redis_metrics import Counter
from django_redis_metrics.core.batch import is_outage, run_calls
from django_redis_metrics.core.connection import fail_fast_connection
from django_redis_metrics.sending import failopen, sender
from django_redis_metrics.sending.writes import Submission, Writes, build_batch
from django_redis_metrics.testing import RedisClusterServers, RedisServer


@pytest.fixture(scope="module")
def servers() -> Iterator[RedisClusterServers]:
    """A cluster of this module's own: its slot map is made to disagree."""
    servers = RedisClusterServers(masters=3).start()
    yield servers
    servers.stop()


@pytest.fixture
def on_servers(settings: Any, servers: RedisClusterServers, fresh_state: None) -> None:
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": servers.url,
        "CLUSTER": True,
        "PREFIX": "looped",
        "FAIL_OPEN_TIMEOUT": 0.2,
    }


class SlotLoop:
    """The slot of ``key`` handed by its master to another master, which was never told: each
    sends the client to the other. Only a slot without keys can be handed over so."""

    def __init__(self, servers: RedisClusterServers, key: str) -> None:
        self.owner = servers.master_of(key)
        self.other = next(node for node in servers.masters if node is not self.owner)
        self.slot = int(self.owner.client().execute_command("CLUSTER KEYSLOT", key))

    def __enter__(self) -> SlotLoop:
        self._assign(self.other)
        return self

    def __exit__(self, *exc: object) -> None:
        self.restore()

    def restore(self) -> None:
        self._assign(self.owner)

    def _assign(self, node: RedisServer) -> None:
        node_id = node.client().execute_command("CLUSTER MYID")
        self.owner.client().execute_command("CLUSTER SETSLOT", self.slot, "NODE", node_id)


def hit(name: str) -> None:
    writes = Writes()
    writes.incr(name)
    assert sender.submit(writes)


def test_a_redirect_loop_is_an_outage(on_servers: None, servers: RedisClusterServers) -> None:
    writes = Writes()
    writes.incr("classified")
    calls = build_batch([Submission(writes, int(time.time()))]).calls
    with SlotLoop(servers, Counter("classified").meta_key):
        with pytest.raises(ClusterError, match="TTL exhausted") as caught:
            run_calls(fail_fast_connection(), calls)
        assert is_outage(caught.value)
        error, _duplicates = failopen.send(calls)
        assert isinstance(error, ClusterError)  # to be sent again, not dropped


def test_a_batch_met_by_a_redirect_loop_is_held_and_stored_once_the_map_agrees(
    on_servers: None, servers: RedisClusterServers
) -> None:
    name = "held"
    with SlotLoop(servers, Counter(name).meta_key) as loop:
        for _ in range(3):
            hit(name)
        assert not sender.flush(timeout=2)  # held: the nodes still disagree
        assert sender.sender.failures >= 1
        loop.restore()
        assert sender.flush()
    assert Counter(name).lifetime_total() == 3
    assert sender.sender.dropped == 0
