"""Private Redis servers for the suite: one single node and one 3-master Redis Cluster.

Both are started once per session on free ports (never 6379) and stopped at the end. Each test
gets a fresh key PREFIX, so tests never see each other's keys and nothing needs flushing.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from django_redis_metrics.core.connection import RedisClient, get_redis_connection, is_cluster
from django_redis_metrics.testing import RedisClusterServers, RedisServer

from . import browser
from .roundtrips import RoundTrips

# The fixtures of the tests that go through Django (middleware, admin, sender), for every folder.
pytest_plugins = ["tests.django_site", "tests.archive_databases"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``browser`` needs Chromium: skipped without it (or failed, if required)."""
    if item.get_closest_marker("browser") is not None:
        browser.require_chromium(browser.CHROMIUM)


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer().start()
    yield server
    server.cleanup()


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[RedisClusterServers]:
    cluster = RedisClusterServers(masters=3).start()
    yield cluster
    cluster.stop()


@dataclass
class Backend:
    """The Redis a test runs against, and the settings pointing at it."""

    name: str
    client: RedisClient
    prefix: str
    url: str

    @property
    def cluster(self) -> bool:
        return is_cluster(self.client)

    def keys(self) -> list[str]:
        """Every key under this test's prefix (SCAN on every node, never KEYS)."""
        found = self.client.scan_iter(match=f"{self.prefix}:*", count=1000)
        return sorted(k.decode() if isinstance(k, bytes) else k for k in found)


def _configure(settings: Any, url: str, cluster: bool) -> str:
    prefix = f"t{uuid.uuid4().hex[:12]}"
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": url,
        "CLUSTER": cluster,
        "PREFIX": prefix,
    }
    return prefix


@pytest.fixture
def single(settings: Any, redis_server: RedisServer) -> Backend:
    """Settings pointing at the private single-node Redis."""
    prefix = _configure(settings, redis_server.url, False)
    return Backend("single", get_redis_connection(), prefix, redis_server.url)


@pytest.fixture(params=["single", "cluster"])
def backend(request: pytest.FixtureRequest, settings: Any) -> Backend:
    """Run the test on the single node, then on the Redis Cluster."""
    if request.param == "single":
        server: RedisServer | RedisClusterServers = request.getfixturevalue("redis_server")
    else:
        server = request.getfixturevalue("redis_cluster")
    prefix = _configure(settings, server.url, request.param == "cluster")
    return Backend(request.param, get_redis_connection(), prefix, server.url)


@pytest.fixture
def cluster(settings: Any, redis_cluster: RedisClusterServers) -> Backend:
    """Settings pointing at the private Redis Cluster only (for cluster-specific behaviour)."""
    prefix = _configure(settings, redis_cluster.url, True)
    return Backend("cluster", get_redis_connection(), prefix, redis_cluster.url)


@pytest.fixture
def metrics_settings(settings: Any) -> Callable[..., None]:
    """Change some ``DJANGO_REDIS_METRICS`` keys for this test only: ``metrics_settings(A=1)``."""

    def update(**values: Any) -> None:
        settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, **values}

    return update


@pytest.fixture
def round_trips(monkeypatch: pytest.MonkeyPatch) -> RoundTrips:
    """Counts the round trips the real client makes during the test."""
    return RoundTrips(monkeypatch)
