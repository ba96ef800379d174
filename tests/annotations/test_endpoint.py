"""The POST endpoint CI annotates through: its own write token (401 without it or with a wrong
one, 403 with the read token), JSON or a form, bad input a 400 storing nothing, a bounded body,
no CSRF token asked for."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from django_redis_metrics import annotations

from ..django_site import client_for, make_user

WRITE = "write-token-0123456789abcdef"
READ = "read-token-0123456789abcdef"


@pytest.fixture
def endpoint(settings: Any, backend: Any) -> str:
    settings.ROOT_URLCONF = "tests.integration.urls"
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "EXPORT_TOKEN": READ,
        "ANNOTATION_TOKEN": WRITE,
    }
    return reverse("django_redis_metrics:annotate")


def post(url: str, body: Any, token: str | None = WRITE, **kwargs: Any) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
    client = Client(enforce_csrf_checks=True)
    if isinstance(body, dict | list) and "content_type" not in kwargs:
        return client.post(url, json.dumps(body), "application/json", headers=headers)
    return client.post(url, body, headers=headers, **kwargs)


def test_no_csrf_token_is_asked_for(endpoint: str, settings: Any) -> None:
    settings.MIDDLEWARE = ["django.middleware.csrf.CsrfViewMiddleware", *settings.MIDDLEWARE]
    assert post(endpoint, {"text": "Deploy v1.4"}).status_code == 201
    assert Client(enforce_csrf_checks=True).post(reverse("admin:login")).status_code == 403


def test_json_round_trip(endpoint: str) -> None:
    now = time.time()
    response = post(endpoint, {"text": "Deploy v1.4", "tags": ["deploy"], "when": now - 5})
    assert response.status_code == 201
    assert response.json() == {"when": now - 5, "text": "Deploy v1.4", "tags": ["deploy"]}
    assert annotations(now - 60, now) == [response.json()]


def test_form_round_trip_with_repeated_tags_and_an_iso_time(endpoint: str) -> None:
    now = time.time()
    iso = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(now - 30))
    body = f"text=Deploy+v1.5&tag=deploy&tag=web&when={iso.replace('+', '%2B')}"
    response = post(endpoint, body, content_type="application/x-www-form-urlencoded")
    assert response.status_code == 201, response.content
    [stored] = annotations(now - 60, now)
    assert stored == {"when": int(now - 30), "text": "Deploy v1.5", "tags": ["deploy", "web"]}


def test_without_a_token_or_with_a_wrong_one_401(endpoint: str, backend: Any) -> None:
    missing = post(endpoint, {"text": "x"}, token=None)
    assert missing.status_code == 401
    assert missing["WWW-Authenticate"] == "Bearer"
    wrong = post(endpoint, {"text": "x"}, token="not-the-token-0123456789")
    assert wrong.status_code == 401
    assert "invalid_token" in wrong["WWW-Authenticate"]
    assert post(endpoint, {"text": "x"}, token="").status_code == 401
    assert backend.keys() == []


def test_the_read_token_is_403(endpoint: str, backend: Any) -> None:
    response = post(endpoint, {"text": "x"}, token=READ)
    assert response.status_code == 403
    assert "EXPORT_TOKEN only reads" in response.json()["error"]
    assert backend.keys() == []


@pytest.mark.django_db
def test_a_staff_session_is_not_a_token(endpoint: str, backend: Any) -> None:
    staff = client_for(make_user("olga", staff=True, permitted=True))
    response = staff.post(endpoint, json.dumps({"text": "x"}), "application/json")
    assert response.status_code == 401
    assert backend.keys() == []


def test_nothing_is_stored_while_no_write_token_is_set(
    endpoint: str, backend: Any, settings: Any
) -> None:
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "ANNOTATION_TOKEN": None}
    response = post(endpoint, {"text": "x"})
    assert response.status_code == 401
    assert "ANNOTATION_TOKEN is not set" in response.json()["error"]
    assert backend.keys() == []


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"text": ""}, "empty or blank"),
        ({"tags": ["deploy"]}, "text must be a str"),
        ({"text": "x", "tags": ["no spaces"]}, "is not a tag"),
        ({"text": "x", "tags": "deploy", "colour": "red"}, "Unknown fields ['colour']"),
        ({"text": "x", "when": "yesterday"}, "ISO 8601"),
        ({"text": "x", "when": True}, "epoch seconds"),
        ({"text": "x", "when": 1.0}, "older than"),
        (["text"], "JSON object"),
    ],
)
def test_bad_input_is_a_400_with_a_clear_message_and_stores_nothing(
    endpoint: str, backend: Any, body: Any, message: str
) -> None:
    response = post(endpoint, body)
    assert response.status_code == 400
    assert message in response.json()["error"]
    assert backend.keys() == []


def test_bad_bodies(endpoint: str, backend: Any) -> None:
    assert post(endpoint, "{not json", content_type="application/json").status_code == 400
    assert post(endpoint, "text=x", content_type="text/plain").status_code == 415
    huge = json.dumps({"text": "x" * 70_000})
    assert post(endpoint, huge, content_type="application/json").status_code == 413
    assert Client().get(endpoint).status_code == 405
    assert backend.keys() == []
