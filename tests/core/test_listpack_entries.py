"""The cleaners compact a trimmed hash to the server's own ``hash-max-listpack-entries``, read
once per client with ``CONFIG GET``; the 128 of ``LISTPACK_ENTRIES`` only where CONFIG is
refused."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster

from django_redis_metrics import Counter
from django_redis_metrics.core.cleaning import listpack_entries
from django_redis_metrics.core.connection import get_redis_connection
from django_redis_metrics.core.retention import LISTPACK_ENTRIES
from django_redis_metrics.counter.cleaner import clean_counters
from django_redis_metrics.testing import RedisServer

T = 1_700_000_040


@pytest.fixture(scope="module")
def server_300() -> Iterator[RedisServer]:
    """A private server whose compact hashes hold up to 300 fields (neither 128 nor 512)."""
    server = RedisServer(options=["--hash-max-listpack-entries", "300"]).start()
    yield server
    server.cleanup()


def _use(settings: Any, url: str) -> None:
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": url, "PREFIX": f"t{uuid.uuid4().hex[:12]}"}


def _config_gets(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return int(stats.get("cmdstat_config|get", {}).get("calls", 0))


def test_a_trimmed_hash_is_compacted_to_the_servers_own_limit(settings, server_300):
    """250 slices kept: above the 128 once assumed, below this server's 300. The cleaner reads
    300 and rewrites the trimmed hash into a listpack (with 128 it would stay a hashtable)."""
    _use(settings, server_300.url)
    client = server_300.client()
    counter = Counter("grown", precisions=[1], samples=250)
    counter.incr(when=T)
    key = counter.key(1)
    client.hset(key, mapping=dict.fromkeys(range(T - 2000, T), 1))
    assert client.object("encoding", key) == b"hashtable"
    report = clean_counters(now=T)
    assert client.hlen(key) == 250
    assert client.object("encoding", key) == b"listpack"
    assert "counter 'grown' precision 1s: compacted" in report.details
    client.close()


def test_the_value_is_read_once_per_client(settings, server_300):
    _use(settings, server_300.url)
    client = server_300.client()
    Counter("once", precisions=[1], samples=5).incr(when=T)
    fresh = redis.Redis.from_url(server_300.url)  # a client not seen before: nothing cached
    before = _config_gets(client)
    assert [listpack_entries(fresh) for _ in range(3)] == [300, 300, 300]
    assert _config_gets(client) - before == 1
    before = _config_gets(client)
    for _ in range(3):
        clean_counters(now=T)
    assert _config_gets(client) - before <= 1  # the process's client: at most its first read
    fresh.close()
    client.close()


def test_the_default_is_assumed_only_where_config_is_refused(settings, server_300):
    admin = server_300.client()
    user = f"u{uuid.uuid4().hex[:8]}"
    admin.acl_setuser(user, enabled=True, nopass=True, keys=["~*"], commands=["+@all", "-config"])
    limited = redis.Redis(host="127.0.0.1", port=server_300.port, username=user)
    try:
        assert listpack_entries(limited) == LISTPACK_ENTRIES == 128
        assert listpack_entries(admin) == 300
    finally:
        limited.close()
        admin.acl_deluser(user)
        admin.close()


def test_on_a_cluster_the_smallest_masters_value_counts(cluster):
    """Every master is asked; a hash compacted for the smallest value is compact on any node."""
    client = get_redis_connection()
    nodes = [node for node in client.get_primaries()]
    low = nodes[1].redis_connection
    assert low is not None
    saved = low.config_get("hash-max-listpack-entries")["hash-max-listpack-entries"]
    low.config_set("hash-max-listpack-entries", 200)
    fresh = RedisCluster.from_url(cluster.url)
    try:
        assert listpack_entries(fresh) == min(200, int(saved))
    finally:
        low.config_set("hash-max-listpack-entries", saved)
        fresh.close()
