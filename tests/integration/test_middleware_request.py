"""What MetricsMiddleware must leave alone: the session and the user (no ``Vary: Cookie``, no
user query), and static files served under a sub-path."""

from __future__ import annotations

import io
import sys
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.core.handlers.wsgi import WSGIHandler
from django.test import AsyncClient, Client
from django.urls import set_script_prefix

from django_redis_metrics import Counter, UniqueBitmap
from django_redis_metrics.core.drive import drive
from django_redis_metrics.core.labels.aggregate import series_of_steps
from django_redis_metrics.sending import sender

from ..django_site import MIDDLEWARE, flushed, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(single: Any, with_middleware: Any) -> Any:
    with_middleware.ROOT_URLCONF = "tests.integration.user_urls"
    return with_middleware


@pytest.mark.parametrize("signed", [False, True])
def test_the_middleware_changes_no_vary_header(site: Any, alice: User, signed: bool) -> None:
    client = signed_in(alice) if signed else Client()
    with_metrics = flushed(client.get("/sync/"))
    site.MIDDLEWARE = [m for m in MIDDLEWARE if "Metrics" not in m]
    without = client.get("/sync/")
    assert with_metrics.get("Vary") == without.get("Vary")
    assert with_metrics.get("Vary") is None


def test_the_async_middleware_changes_no_vary_header_either(site: Any, alice: User) -> None:
    client = AsyncClient()
    client.force_login(alice)
    response = flushed(async_to_sync(client.get)("/async/"))
    assert response.status_code == 200
    assert response.get("Vary") is None


def test_users_are_marked_when_their_request_loaded_them(site: Any, alice: User) -> None:
    flushed(signed_in(alice).get("/whoami/"))
    assert UniqueBitmap("active_users").contains(alice.pk, "day")
    bob = User.objects.create_user("bob", password="pw")
    client = AsyncClient()
    client.force_login(bob)
    assert flushed(async_to_sync(client.get)("/awhoami/")).content == b"bob"
    assert UniqueBitmap("active_users").contains(bob.pk, "day")
    assert UniqueBitmap("active_users").count("day") == 2


def serve(path: str, script_name: str) -> int:
    """Serve ``path`` through a real ``WSGIHandler`` (Django's test client sets no script
    prefix), under ``script_name``; the status code."""
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "SCRIPT_NAME": script_name,
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(),
        "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    statuses: list[str] = []
    try:
        for _chunk in WSGIHandler()(environ, lambda status, headers: statuses.append(status)):
            pass
    finally:
        set_script_prefix("/")
    sender.flush()
    return int(statuses[0].split()[0])


def test_static_files_are_excluded_under_a_script_prefix(single: Any, with_middleware: Any) -> None:
    with_middleware.STATIC_URL = "static/"  # Django serves it as /sub/static/ under /sub
    with_middleware.ALLOWED_HOSTS = ["testserver"]
    assert serve("/static/app.css", "/sub") == 404
    assert Counter.objects.names() == []
    assert serve("/sync/", "/sub") == 200
    hits = Counter("hits", labels=("view", "status"))
    assert [s.label_pairs for s in drive(series_of_steps(hits))] == [
        (("view", "sync"), ("status", "2xx"))
    ]
