"""System checks of how the app is wired into a site: the middleware's place (W061) and a
Redis that does not answer (W060), through Django's own check framework."""

from __future__ import annotations

from typing import Any

from django.core.checks import run_checks

from django_redis_metrics.testing import free_port

OURS = "django_redis_metrics.middleware.MetricsMiddleware"
AUTH = "django.contrib.auth.middleware.AuthenticationMiddleware"
SESSIONS = "django.contrib.sessions.middleware.SessionMiddleware"


def ids() -> list[str]:
    return [message.id for message in run_checks() if message.id.startswith("django_redis")]


def test_the_middleware_before_authentication_is_a_warning(settings: Any, backend: Any) -> None:
    settings.MIDDLEWARE = [SESSIONS, OURS, AUTH]
    assert ids() == ["django_redis_metrics.W061"]
    settings.MIDDLEWARE = [SESSIONS, AUTH, OURS]
    assert ids() == []
    settings.MIDDLEWARE = [OURS]  # no authentication at all: nobody can be marked
    assert ids() == ["django_redis_metrics.W061"]
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "ACTIVE_USERS": None}
    assert ids() == []  # nobody is marked anyway
    settings.MIDDLEWARE = [SESSIONS, AUTH]  # not installed: nothing to say
    assert ids() == []


def test_a_redis_that_does_not_answer_is_a_warning_naming_it_masked(settings: Any) -> None:
    dead = f"redis://metrics:s3cret@127.0.0.1:{free_port()}/0"
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": dead, "SOCKET_CONNECT_TIMEOUT": 0.5}
    messages = [m for m in run_checks() if m.id == "django_redis_metrics.W060"]
    assert len(messages) == 1
    text = messages[0].msg
    assert "127.0.0.1" in text and "***@" in text and "s3cret" not in text


def test_a_redis_that_answers_says_nothing(backend: Any) -> None:
    assert "django_redis_metrics.W060" not in ids()
