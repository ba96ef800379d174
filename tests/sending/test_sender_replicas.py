"""``SENDER["REPLICAS"]``: the sender counts a batch stored once replicas hold it (``WAIT``),
and keeps it (to send again, exactly once) while they do not: shown with a real replica
stopped by SIGSTOP. The failovers it guards against are in tests/integration/test_sentinel.py.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from django_redis_metrics import Counter
from django_redis_metrics.checks import check_settings
from django_redis_metrics.core.connection import using_client
from django_redis_metrics.sending import sender
from django_redis_metrics.sending.replicated import marker_key
from django_redis_metrics.sending.writes import Writes
from django_redis_metrics.testing import RedisServer


class Replicated:
    """A master and its replica, both private."""

    def __init__(self) -> None:
        self.master = RedisServer().start()
        self.replica = RedisServer(
            options=("--replicaof", "127.0.0.1", str(self.master.port))
        ).start()
        deadline = time.monotonic() + 30
        while self.replica.client().info("replication")["master_link_status"] != "up":
            assert time.monotonic() < deadline, "the replica did not sync"
            time.sleep(0.05)

    def cleanup(self) -> None:
        self.replica.cleanup()
        self.master.cleanup()


@pytest.fixture
def replicated(fresh_state: None) -> Iterator[Replicated]:
    servers = Replicated()
    try:
        yield servers
    finally:
        servers.cleanup()


def configure(settings: Any, servers: Replicated, replicas: int) -> None:
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": servers.master.url,
        "PREFIX": "replicas",
        "SENDER": {"TIMEOUT": 0.2, "REPLICAS": replicas},
    }


def hit(times: int = 1) -> None:
    for _ in range(times):
        writes = Writes()
        writes.incr("hits")
        assert sender.submit(writes)


def total_on(server: RedisServer) -> int:
    with using_client(server.client()):
        return Counter("hits").total(86400)


def test_a_batch_no_replica_acknowledged_is_kept_then_stored_exactly_once(
    settings: Any, replicated: Replicated
) -> None:
    configure(settings, replicated, replicas=1)
    hit()
    assert sender.flush()
    assert total_on(replicated.replica) == 1  # flushed means the replica holds it
    replicated.replica.pause()
    try:
        hit(5)
        # The master applies the batch, but no replica acknowledges it: the sender keeps it.
        assert not sender.flush(timeout=1.5)
        assert sender.sender.failures >= 1
        assert sender.sender.pending() == 5
    finally:
        replicated.replica.resume()
    assert sender.flush(timeout=15)
    # Sent again, applied once: the master had applied it already.
    assert sender.sender.duplicates >= 1
    assert total_on(replicated.master) == 6
    assert total_on(replicated.replica) == 6
    assert replicated.master.client().pttl(marker_key()) > 0  # the marker never lasts


def test_without_replicas_asked_a_batch_is_stored_once_the_master_has_it(
    settings: Any, replicated: Replicated
) -> None:
    configure(settings, replicated, replicas=0)
    hit()
    assert sender.flush()
    replicated.replica.pause()
    try:
        hit(5)
        assert sender.flush(timeout=5)  # no WAIT: the stopped replica does not hold it up
        assert sender.sender.failures == 0
        assert not replicated.master.client().exists(marker_key())
    finally:
        replicated.replica.resume()
    assert total_on(replicated.master) == 6


def test_more_replicas_than_the_master_has_keep_every_batch(
    settings: Any, replicated: Replicated
) -> None:
    configure(settings, replicated, replicas=2)
    hit(3)
    assert not sender.flush(timeout=1.0)
    assert sender.sender.pending() == 3
    sender.reset()


@pytest.mark.parametrize(
    ("value", "error"),
    [(-1, "at least 0"), (17, "at most 16"), ("1", "must be an int"), (True, "must be an int")],
)
def test_a_bad_replicas_value_is_refused_by_the_checks(
    settings: Any, value: object, error: str
) -> None:
    settings.DJANGO_REDIS_METRICS = {"SENDER": {"REPLICAS": value}}
    (message,) = check_settings()
    assert message.id == "django_redis_metrics.E093"
    assert "REPLICAS" in message.msg and error in message.msg


def test_replicas_are_refused_on_redis_cluster(settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {"CLUSTER": True, "SENDER": {"REPLICAS": 1}}
    messages = [m for m in check_settings() if m.id == "django_redis_metrics.E093"]
    assert len(messages) == 1 and "Redis Cluster" in messages[0].msg
    settings.DJANGO_REDIS_METRICS = {"CLUSTER": True, "SENDER": {"REPLICAS": 0}}
    assert "django_redis_metrics.E093" not in [m.id for m in check_settings()]
