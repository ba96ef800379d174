"""MetricsMiddleware: what it counts, in how many round trips, and how it fails open."""

from __future__ import annotations

import logging
import socket
import threading
import uuid
from typing import Any

import pytest
import redis
from asgiref.sync import async_to_sync
from django.http import HttpResponse
from django.test import AsyncClient, Client
from django.urls import reverse
from redis.connection import AbstractConnection

from django_redis_metrics import Counter
from django_redis_metrics.core.connection import fail_fast_connection
from django_redis_metrics.core.drive import drive
from django_redis_metrics.core.labels.aggregate import series_of_steps
from django_redis_metrics.core.labels.labelling import SEPARATOR
from django_redis_metrics.middleware import STATUS_CLASSES, MetricsMiddleware
from django_redis_metrics.sending import sender
from django_redis_metrics.sending.writes import Writes
from django_redis_metrics.testing import RedisServer

from ..django_site import counting_round_trips, wait_for_a_failure

pytestmark = pytest.mark.django_db


HITS = Counter("hits", labels=("view", "status"))


def hit_counters() -> list[str]:
    """``hits`` and ``hits:<view>`` for each view of the labelled counter's series, and the
    plain counters named otherwise (leaving out the per-view status counters)."""
    series = drive(series_of_steps(HITS))
    views = sorted({dict(s.label_pairs).get("view", "__other__") for s in series})
    plain = [
        name
        for name in Counter.objects.names()
        if SEPARATOR not in name and name != "hits" and not name.startswith("status:")
    ]
    return sorted((["hits"] if views else []) + [f"hits:{view}" for view in views] + plain)


def hits(name: str) -> int:
    """``Counter(name)``'s total today; ``hits:<view>`` is the view's series of ``hits``."""
    if name.startswith("hits:"):
        view = name.removeprefix("hits:")
        return sum(HITS.labels(view=view, status=c).total(86400) for c in STATUS_CLASSES)
    return Counter(name).total(86400)


def get(path: str) -> int:
    status = Client().get(path).status_code
    sender.flush()
    return status


def test_counts_sync_view_site_wide_and_per_view(single: Any, with_middleware: Any) -> None:
    assert get("/sync/") == 200
    assert get("/sync/") == 200
    assert hits("hits") == 2
    assert hits("hits:sync") == 2
    assert hit_counters() == ["hits", "hits:sync"]


def test_counts_on_a_single_node_and_on_redis_cluster(backend: Any, with_middleware: Any) -> None:
    assert get("/sync/") == 200
    assert get("/articles/x/") == 200
    assert hits("hits") == 2
    assert hits("hits:article") == 1
    assert hit_counters() == ["hits", "hits:article", "hits:sync"]


def test_counts_async_view_through_the_async_stack(single: Any, with_middleware: Any) -> None:
    response = async_to_sync(AsyncClient().get)("/async/")
    sender.flush()
    assert response.status_code == 200
    assert response.content == b"async"
    assert hits("hits") == 1
    assert hits("hits:async") == 1


def test_is_sync_and_async_capable() -> None:
    async def async_get_response(request: Any) -> HttpResponse:
        return HttpResponse()

    assert MetricsMiddleware(async_get_response).async_mode
    assert not MetricsMiddleware(lambda request: HttpResponse()).async_mode


def test_counts_class_based_view(single: Any, with_middleware: Any) -> None:
    assert get("/class/") == 200
    assert hits("hits:class") == 1


def test_names_pages_by_view_never_by_path(single: Any, with_middleware: Any) -> None:
    for slug in ("one", "two", "three"):
        assert get(f"/articles/{slug}/") == 200
    assert hits("hits:article") == 3
    assert get("/unnamed/") == 200
    assert hits("hits:tests.integration.views.sync_view") == 1
    assert not any("one" in name for name in Counter.objects.names())


def test_unresolved_requests_share_one_counter(single: Any, with_middleware: Any) -> None:
    for path in ("/nope/", "/wp-admin.php", "/%3Cscript%3E/"):
        assert get(path) == 404
    assert hits("hits:unresolved") == 3
    assert hits("hits") == 3
    assert hit_counters() == ["hits", "hits:unresolved"]


def test_excludes_admin_health_and_static(single: Any, with_middleware: Any) -> None:
    assert get("/health/") == 200
    assert get("/admin/login/") == 200
    assert get("/static/app.css") == 404
    assert Counter.objects.names() == []


def test_our_own_endpoints_are_never_counted(single: Any, with_middleware: Any) -> None:
    """A Prometheus scrape is not the site's traffic: not counted, allowed or refused, by
    default and with an EXCLUDE_VIEWS of the site's own."""
    url = reverse("django_redis_metrics:prometheus")
    assert get(url) == 401  # no token: refused, and still not counted
    with_middleware.DJANGO_REDIS_METRICS = {
        **with_middleware.DJANGO_REDIS_METRICS,
        "EXPORT_TOKEN": "t0ken",
        "EXCLUDE_VIEWS": ["sync"],
    }
    response = Client().get(url, headers={"Authorization": "Bearer t0ken"})
    sender.flush()
    assert response.status_code == 200
    assert Counter.objects.names() == []
    assert get("/class/") == 200  # the site's own views still are
    assert hits("hits") == 1


def test_exclusions_and_names_are_settings(single: Any, with_middleware: Any) -> None:
    with_middleware.DJANGO_REDIS_METRICS = {
        **with_middleware.DJANGO_REDIS_METRICS,
        "HITS_COUNTER": None,
        "VIEW_COUNTER": "pages.{view}",
        "EXCLUDE_VIEWS": ["sync"],
        "EXCLUDE_PATHS": ["/class/"],
    }
    for path in ("/sync/", "/class/", "/health/"):
        assert get(path) == 200
    assert hit_counters() == ["pages.health"]


def test_settings_changed_apply_to_the_next_request(single: Any, with_middleware: Any) -> None:
    """The middleware reads its settings once per change of them, not once per process: a
    setting changed through Django's ``setting_changed`` signal (the ``settings`` fixture,
    ``override_settings``), or Django's STATIC_URL changed, applies to the very next request."""

    def change(**values: Any) -> None:
        with_middleware.DJANGO_REDIS_METRICS = {**with_middleware.DJANGO_REDIS_METRICS, **values}

    change(EXCLUDE_VIEWS=[])
    assert get("/sync/") == 200
    change(VIEW_COUNTER="pages.{view}")
    assert get("/sync/") == 200
    change(EXCLUDE_VIEWS=["class"])
    assert get("/class/") == 200
    with_middleware.STATIC_URL = "/sync/"
    assert get("/sync/") == 200
    assert hits("hits:sync") == 2
    assert hits("pages.sync") == 1
    assert hits("pages.class") == 0
    assert hits("hits") == 2


def test_the_plan_is_made_again_only_when_a_setting_it_reads_changes(
    single: Any, with_middleware: Any
) -> None:
    """No comparison of the settings on every request: the plan is kept until Django's
    ``setting_changed`` signal names a setting it is made from."""
    from django.core.signals import setting_changed

    from django_redis_metrics import middleware

    plan = middleware.request_plan()
    assert middleware.request_plan() is plan
    with_middleware.LANGUAGE_CODE = "fr"  # not read by the plan
    assert middleware.request_plan() is plan
    with_middleware.MEDIA_URL = "/uploads/"
    assert middleware.request_plan() is not plan
    assert "/uploads/" in middleware.request_plan().exclude_paths
    plan = middleware.request_plan()
    setting_changed.send(sender=None, setting="DJANGO_REDIS_METRICS", value=None, enter=True)
    assert middleware.request_plan() is not plan
    plan = middleware.request_plan()
    from django.conf import settings as django_settings

    # Another dict assigned without the signal (as a plan made from the old one by another
    # thread would be) is not taken for the old one.
    django_settings.DJANGO_REDIS_METRICS = {**django_settings.DJANGO_REDIS_METRICS}
    assert middleware.request_plan() is not plan


def test_caps_distinct_view_counters(single: Any, with_middleware: Any) -> None:
    with_middleware.DJANGO_REDIS_METRICS = {
        **with_middleware.DJANGO_REDIS_METRICS,
        "MAX_VIEW_COUNTERS": 1,
    }
    for path in ("/sync/", "/class/", "/articles/a/", "/sync/"):
        assert get(path) == 200
    assert hits("hits:sync") == 2
    assert hits("hits:other") == 2
    assert hit_counters() == ["hits", "hits:other", "hits:sync"]


def test_one_round_trip_per_request(
    single: Any, with_middleware: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = ("/sync/", "/class/", "/articles/x/", "/nope/")
    for path in paths:  # the handshake, script loading and each view's series' admission
        get(path)  # happen once (see test_middleware_labels.py)
    with counting_round_trips(monkeypatch) as sent:
        for path in paths:
            sent.reset()
            get(path)
            assert sent.calls == 1, path
    assert hits("hits") == 8


def test_requests_never_talk_to_redis_themselves(
    single: Any, with_middleware: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sync or async, the request only queues: every socket write happens in the sender."""
    get("/sync/")
    threads: list[str] = []
    original = AbstractConnection.send_packed_command

    def send_packed_command(self: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
        threads.append(threading.current_thread().name)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", send_packed_command)
    get("/sync/")
    async_to_sync(AsyncClient().get)("/async/")
    sender.flush()
    assert threads and set(threads) == {"metrics-sender"}


# Fail open


def never_answering_socket() -> socket.socket:
    """A listening socket that never accepts: connects succeed, nothing ever replies."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def point_at(settings: Any, url: str, **extra: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": url,
        "PREFIX": "failopen",
        "FAIL_OPEN_TIMEOUT": 0.2,
        **extra,
    }
    sender.reset()


def test_requests_are_counted_through_a_redis_restart(
    with_middleware: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server = RedisServer(appendonly=True).start()
    try:
        point_at(with_middleware, server.url)
        assert get("/sync/") == 200
        server.kill()
        with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
            for _ in range(5):
                assert Client().get("/sync/").status_code == 200  # never waits on Redis
            wait_for_a_failure()
            assert sender.sender.pending() == 5  # kept, not dropped
            server.restart()
            assert sender.flush()
        assert "Metrics writes are waiting: Redis at " + server.url in caplog.text
        assert "Metrics writes resumed" in caplog.text
        assert hits("hits:sync") == 6
        assert hits("hits") == 6
    finally:
        server.cleanup()


def test_requests_are_counted_once_an_address_that_never_answered_answers(
    with_middleware: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sock = never_answering_socket()
    port = sock.getsockname()[1]
    server = None
    try:
        point_at(with_middleware, f"redis://127.0.0.1:{port}/0")
        with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
            assert Client().get("/sync/").status_code == 200
            assert Client().get("/class/").status_code == 200
            wait_for_a_failure()
        assert "Timeout" in caplog.text

        sock.close()  # a real Redis now answers at that address
        server = RedisServer(port=port).start()
        assert sender.flush()
        assert hits("hits:sync") == 1
        assert hits("hits") == 2
    finally:
        sock.close()
        if server is not None:
            server.stop()


def test_async_view_fails_open_too(with_middleware: Any) -> None:
    sock = never_answering_socket()
    try:
        point_at(with_middleware, f"redis://127.0.0.1:{sock.getsockname()[1]}/0")
        response = async_to_sync(AsyncClient().get)("/async/")
        assert response.status_code == 200
        wait_for_a_failure()
        assert sender.sender.pending() == 1
    finally:
        sock.close()


def test_models_still_raise_when_called_directly(with_middleware: Any) -> None:
    sock = never_answering_socket()
    try:
        point_at(
            with_middleware, f"redis://127.0.0.1:{sock.getsockname()[1]}/0", SOCKET_TIMEOUT=0.2
        )
        with pytest.raises(Exception) as info:
            Counter("direct").incr()
        assert "Timeout" in type(info.value).__name__
    finally:
        sock.close()


@pytest.mark.parametrize(
    "backend_path",
    [
        "django.core.cache.backends.redis.RedisCache",
        "django_redis.cache.RedisCache",
    ],
)
def test_counts_through_a_shared_caches_alias(
    redis_server: RedisServer, with_middleware: Any, backend_path: str
) -> None:
    with_middleware.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "metrics": {"BACKEND": backend_path, "LOCATION": redis_server.url},
    }
    with_middleware.DJANGO_REDIS_METRICS = {
        "CONNECTION": "metrics",
        "PREFIX": f"alias{uuid.uuid4().hex[:8]}",
    }
    client = fail_fast_connection()
    assert client.connection_pool.connection_kwargs["socket_timeout"] == 0.25
    assert client.connection_pool.connection_kwargs["port"] == redis_server.port
    assert get("/sync/") == 200
    assert hits("hits:sync") == 1


def test_writes_whose_preparation_met_a_redis_error_are_prepared_again(
    single: Any, fresh_state: None
) -> None:
    failures = [redis.ConnectionError("mapping a user id failed")] * 2

    def needs_redis(batch: Any) -> None:
        if failures:
            raise failures.pop()
        Counter("deferred").incr(batch=batch)

    writes = Writes()
    writes.incr("prepared")
    writes.defer(needs_redis)
    assert sender.submit(writes)
    assert sender.flush()
    assert sender.sender.failures == 2  # nothing was sent: prepared again after a wait
    assert hits("prepared") == 1
    assert hits("deferred") == 1
