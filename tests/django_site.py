"""Fixtures and helpers of the tests that go through Django: the middleware, decorators, admin
and sender (a pytest plugin of the root conftest, so every test folder reaches its fixtures)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from django_redis_metrics.admin import common as admin_common
from django_redis_metrics.middleware import view_names
from django_redis_metrics.sending import sender

from .roundtrips import RoundTrips

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_redis_metrics.middleware.MetricsMiddleware",
]


@pytest.fixture
def fresh_state() -> Iterator[None]:
    """The sender's buffer, fail-open clients and per-view names start clean, and nothing
    queued (or held for a Redis that a test stopped) reaches the next test's settings."""
    sender.reset()
    view_names.clear()
    yield
    sender.reset()
    view_names.clear()


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> float:
    """The admin pages' clock held still: a minute or a day ending mid-test moves nothing."""
    now = time.time()
    monkeypatch.setattr(admin_common, "current_time", lambda: now)
    return now


@pytest.fixture
def with_middleware(settings: Any, fresh_state: None) -> Any:
    settings.MIDDLEWARE = MIDDLEWARE
    settings.ROOT_URLCONF = "tests.integration.urls"
    return settings


@pytest.fixture
def alice() -> Any:
    from django.contrib.auth.models import User

    return User.objects.create_user("alice", password="pw")


def signed_in(user: Any) -> Any:
    """A test client logged in as ``user``."""
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def wait_for_a_failure(since: int = 0) -> None:
    """Until the sender has met the failing Redis more than ``since`` times (it lingers
    ``SEND_DELAY`` before its first attempt)."""
    deadline = time.monotonic() + 10
    while sender.sender.failures <= since:
        assert time.monotonic() < deadline, "the sender never tried"
        time.sleep(0.01)


def flushed(response: Any) -> Any:
    """``response``, once every metrics write it queued has been sent."""
    sender.flush()
    return response


@contextmanager
def counting_round_trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[RoundTrips]:
    """Round trips counted inside the block only."""
    with monkeypatch.context() as patch:
        yield RoundTrips(patch)


# The admin's Metrics section


def admin_url(model: str, suffix: str) -> str:
    return reverse(f"admin:django_redis_metrics_{model}_{suffix}")


def make_user(username: str, *, staff: bool, permitted: bool, superuser: bool = False) -> User:
    user = User.objects.create_user(username, password="pw", is_staff=staff, is_superuser=superuser)
    if permitted:
        user.user_permissions.add(
            Permission.objects.get(
                codename="view_metrics", content_type__app_label="django_redis_metrics"
            )
        )
    return user


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def analyst(single: Any, settings: Any) -> Client:
    """A staff member allowed to see the Metrics pages, on the integration URLconf."""
    settings.ROOT_URLCONF = "tests.integration.urls"
    return client_for(make_user("analyst", staff=True, permitted=True))


def view_hits(view: str) -> int:
    """The requests the middleware counted for ``view``: its series of the ``hits`` counter
    (labelled by view and status class), every class added up."""
    from django_redis_metrics import Counter
    from django_redis_metrics.middleware import STATUS_CLASSES

    hits = Counter("hits", labels=("view", "status"))
    return sum(hits.labels(view=view, status=cls).total(86400) for cls in STATUS_CLASSES)
