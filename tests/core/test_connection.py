"""get_redis_connection: URLs, unix sockets, TLS, shared CACHES pools, clusters, processes."""

from __future__ import annotations

import multiprocessing

import pytest
import redis
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from redis.cluster import RedisCluster

from django_redis_metrics import Counter, get_redis_connection
from django_redis_metrics.testing import RedisServer

T = 1_700_000_040


def test_one_client_per_configuration(single, redis_server):
    assert get_redis_connection() is get_redis_connection()
    with override_settings(
        DJANGO_REDIS_METRICS={"CONNECTION": redis_server.url, "PREFIX": "other"}
    ):
        assert get_redis_connection() is single.client  # the prefix does not need a new pool
    with override_settings(DJANGO_REDIS_METRICS={"CONNECTION": redis_server.url + "?db=1"}):
        assert get_redis_connection() is not single.client


def test_override_settings_takes_effect_at_once(single, redis_server):
    Counter("here", precisions=[60]).incr(when=T)
    with override_settings(DJANGO_REDIS_METRICS={**single_settings(single), "PREFIX": "elsewhere"}):
        assert Counter.objects.names() == []
    assert Counter.objects.names() == ["here"]


def single_settings(backend):
    return {"CONNECTION": backend.url, "PREFIX": backend.prefix}


def test_unix_socket_url(settings):
    server = RedisServer(unix_socket=True).start()
    try:
        settings.DJANGO_REDIS_METRICS = {
            "CONNECTION": f"unix://{server.socket_path}",
            "PREFIX": "sock",
        }
        client = get_redis_connection()
        assert client.connection_pool.connection_class is redis.UnixDomainSocketConnection
        Counter("via socket", precisions=[60]).incr(when=T)
        assert Counter("via socket", precisions=[60]).series(60) == [(T, 1)]
    finally:
        server.cleanup()


def test_rediss_url_uses_tls(settings):
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": "rediss://cache.example.com:6380/0"}
    assert get_redis_connection().connection_pool.connection_class is redis.SSLConnection


def test_timeouts_come_from_settings(settings, redis_server):
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": redis_server.url,
        "SOCKET_TIMEOUT": 0.75,
        "SOCKET_CONNECT_TIMEOUT": 0.25,
    }
    kwargs = get_redis_connection().connection_pool.connection_kwargs
    assert kwargs["socket_timeout"] == 0.75
    assert kwargs["socket_connect_timeout"] == 0.25


def test_cluster_setting_gives_a_cluster_client(backend):
    assert isinstance(get_redis_connection(), RedisCluster) is (backend.name == "cluster")


def test_shares_the_pool_of_a_django_redis_cache(settings, redis_server):
    from django_redis import get_redis_connection as django_redis_connection

    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "metrics": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": redis_server.url},
    }
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": "metrics", "PREFIX": "shared"}
    client = get_redis_connection()
    assert client.connection_pool is django_redis_connection("metrics").connection_pool
    Counter("shared pool", precisions=[60]).incr(when=T)
    assert Counter("shared pool", precisions=[60]).series(60) == [(T, 1)]
    Counter("shared pool", precisions=[60]).delete()


def test_shares_the_pool_of_a_django_redis_cache_backend(settings, redis_server):
    from django.core.cache import caches

    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "native": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": redis_server.url,
        },
    }
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": "native", "PREFIX": "native"}
    client = get_redis_connection()
    assert client.connection_pool is caches["native"]._cache.get_client(write=True).connection_pool
    Counter("native pool", precisions=[60]).incr(when=T)
    assert Counter("native pool", precisions=[60]).total() == 1
    Counter("native pool", precisions=[60]).delete()


def test_unknown_alias_is_a_clear_error(settings):
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": "nope"}
    with pytest.raises(ImproperlyConfigured, match="neither a Redis URL nor a CACHES alias"):
        get_redis_connection()


def _incr_in_child(url: str, prefix: str, queue: multiprocessing.Queue) -> None:
    from django.conf import settings

    settings.DJANGO_REDIS_METRICS = {"CONNECTION": url, "PREFIX": prefix}
    Counter("forked", precisions=[60]).incr(when=T)
    queue.put(id(get_redis_connection().connection_pool))


def test_a_forked_process_gets_its_own_pool(single, redis_server):
    parent_pool = id(get_redis_connection().connection_pool)
    get_redis_connection().ping()  # the parent's pool holds a live connection
    context = multiprocessing.get_context("fork")
    queue: multiprocessing.Queue = context.Queue()
    child = context.Process(target=_incr_in_child, args=(redis_server.url, single.prefix, queue))
    child.start()
    child.join(10)
    assert child.exitcode == 0
    assert queue.get(timeout=1) != parent_pool
    assert Counter("forked", precisions=[60]).series(60) == [(T, 1)]
