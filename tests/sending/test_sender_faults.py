"""The sender through real Redis faults: paused, stopped, killed and restarted, out of memory.

Every test asserts exact totals once Redis answers again: nothing lost, nothing counted twice.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest

from django_redis_metrics import Counter
from django_redis_metrics.sending import sender
from django_redis_metrics.sending.writes import Writes
from django_redis_metrics.testing import RedisClusterServers, RedisServer

from ..django_site import wait_for_a_failure

#: How long each fault lasts: several attempts of the sender (FAIL_OPEN_TIMEOUT 0.2 s), far
#: below the 5 s node timeout of the test cluster (so it does not fail over).
FAULT_SECONDS = 1.5


@pytest.fixture
def server(settings: Any, fresh_state: None) -> Iterator[RedisServer]:
    """A private redis-server with an append-only file, and the settings pointing at it."""
    redis_server = RedisServer(appendonly=True).start()
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": redis_server.url,
        "PREFIX": "faults",
        "FAIL_OPEN_TIMEOUT": 0.2,
    }
    try:
        yield redis_server
    finally:
        redis_server.cleanup()


def hit(name: str = "hits", times: int = 1) -> None:
    for _ in range(times):
        writes = Writes()
        writes.incr(name)
        assert sender.submit(writes)


def one_hit_stored() -> None:
    """Before the fault: a hit stored, so connections and scripts are in place."""
    hit()
    assert sender.flush()


def total(name: str = "hits") -> int:
    return Counter(name).total(86400)


def during(seconds: float, name: str = "hits") -> int:
    """Submit a hit every 50 ms for ``seconds``, as requests would; how many."""
    count = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        hit(name)
        count += 1
        time.sleep(0.05)
    return count


def stopped(server: RedisServer) -> int:
    """Hits submitted while ``server`` is stopped (SIGSTOP) for ``FAULT_SECONDS``."""
    server.pause()
    try:
        return during(FAULT_SECONDS)
    finally:
        server.resume()


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_writes_through_a_client_pause_are_stored_exactly_once(server: RedisServer) -> None:
    one_hit_stored()
    failures = sender.sender.failures
    server.client().execute_command("CLIENT", "PAUSE", int(FAULT_SECONDS * 1000), "ALL")
    sent = during(FAULT_SECONDS + 0.3)
    assert sender.flush()
    assert sender.sender.failures > failures  # the pause really held the sender
    assert total() == 1 + sent


def test_a_reply_lost_after_the_write_was_applied_is_not_counted_twice(
    server: RedisServer,
) -> None:
    """SIGSTOP: each attempt's request waits in the stopped server's socket while the client
    times out and tries again; at SIGCONT the server applies every copy it received."""
    one_hit_stored()
    sent = stopped(server)
    assert sender.flush()
    assert sender.sender.duplicates >= 1  # a batch Redis had applied, whose reply was lost
    assert total() == 1 + sent


def test_a_reply_lost_on_redis_cluster_is_not_counted_twice(
    cluster: Any, redis_cluster: RedisClusterServers, fresh_state: None, metrics_settings: Any
) -> None:
    metrics_settings(FAIL_OPEN_TIMEOUT=0.2)
    one_hit_stored()
    sent = stopped(redis_cluster.master_of(Counter("hits").meta_key))
    assert sender.flush()
    assert sender.sender.duplicates >= 1
    assert total() == 1 + sent


def test_writes_survive_a_restart_with_an_append_only_file(server: RedisServer) -> None:
    hit(times=3)
    assert sender.flush()
    server.kill()
    sent = during(FAULT_SECONDS)
    assert not sender.flush(timeout=0.5)  # kept, not dropped: Redis is away
    server.restart()
    assert sender.flush()
    assert total() == 3 + sent


def test_writes_refused_for_lack_of_memory_are_stored_once_memory_is_back(
    server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    one_hit_stored()
    admin = server.client()
    admin.config_set("maxmemory", 1)  # noeviction: every write is refused (OOM)
    try:
        with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
            sent = during(FAULT_SECONDS)
            assert not sender.flush(timeout=0.5)
    finally:
        admin.config_set("maxmemory", 0)
    assert sender.flush()
    assert "OutOfMemoryError" in caplog.text
    assert total() == 1 + sent


def test_one_warning_when_an_outage_starts_and_one_when_it_ends(
    server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    one_hit_stored()
    server.kill()
    with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
        sent = during(FAULT_SECONDS)
        failures = sender.sender.failures
        server.restart()
        assert sender.flush()
    assert failures >= 3  # retried several times, logged once
    messages = warnings_of(caplog)
    assert len(messages) == 2, messages
    assert messages[0].startswith("Metrics writes are waiting: Redis at " + server.url)
    assert messages[1].startswith("Metrics writes resumed")
    assert "0 requests' writes were dropped" in messages[1]
    assert total() == 1 + sent


def test_a_full_buffer_drops_new_writes_counts_them_and_reports_them_once(
    server: RedisServer, metrics_settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    metrics_settings(SEND_QUEUE_SIZE=5)
    server.kill()
    before, failures = sender.sender.dropped, sender.sender.failures
    with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
        accepted: list[bool] = []
        for _ in range(8):
            writes = Writes()
            writes.incr("hits")
            accepted.append(sender.submit(writes))
        wait_for_a_failure(failures)
        server.restart()
        assert sender.flush()
    assert accepted == [True] * 5 + [False] * 3
    assert sender.sender.dropped - before == 3
    messages = warnings_of(caplog)
    assert [m.split(" (")[0].split(":")[0] for m in messages] == [
        "Metrics buffer full",
        "Metrics writes are waiting",
        "Metrics writes resumed",
    ], messages
    assert "3 requests' writes were dropped" in messages[-1]
    assert total() == 5


def test_the_buffer_is_bounded_in_bytes_too(server: RedisServer, metrics_settings: Any) -> None:
    from django_redis_metrics.sending.buffer import estimated_size
    from django_redis_metrics.sending.writes import Submission

    writes = Writes()
    writes.incr("hits")
    size = estimated_size(Submission(writes, 0))
    metrics_settings(SEND_QUEUE_BYTES=2 * size)
    server.kill()
    accepted = []
    for _ in range(3):
        writes = Writes()
        writes.incr("hits")
        accepted.append(sender.submit(writes))
    server.restart()
    assert sender.flush()
    assert accepted == [True, True, False]
    assert total() == 2


def test_flush_times_out_while_redis_is_away_and_reset_discards_what_waits(
    server: RedisServer,
) -> None:
    server.kill()
    hit(times=2)
    assert not sender.flush(timeout=0.3)
    assert sender.sender.pending() == 2
    sender.reset()
    assert sender.sender.pending() == 0
    server.restart()
    one_hit_stored()
    assert total() == 1
