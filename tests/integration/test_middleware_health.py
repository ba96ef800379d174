"""MetricsMiddleware's site health: status classes and response times per view."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client

from django_redis_metrics import Counter, Statistic
from django_redis_metrics.middleware import status_class
from django_redis_metrics.sending import sender

from ..django_site import counting_round_trips

pytestmark = pytest.mark.django_db


def get(path: str) -> int:
    status = Client(raise_request_exception=False).get(path).status_code
    sender.flush()
    return status


def aget(path: str) -> int:
    status = async_to_sync(AsyncClient(raise_request_exception=False).get)(path).status_code
    sender.flush()
    return status


HITS = Counter("hits", labels=("view", "status"))
LATENCY = Statistic("latency", labels=("view",))


def day_total(name: str) -> int:
    """``Counter(name)``'s total today; ``status:<view>:<class>`` is that series of ``hits``."""
    if name.startswith("status:"):
        _, view, cls = name.rsplit(":", 2)
        return HITS.labels(view=view, status=cls).total(86400)
    return Counter(name).total(86400)


def latency(view: str) -> Statistic:
    return LATENCY.labels(view=view)


def test_counts_each_status_class_per_view(backend: Any, with_middleware: Any) -> None:
    assert [get(p) for p in ("/sync/", "/sync/", "/moved/", "/missing/", "/broken/")] == [
        200,
        200,
        302,
        404,
        500,
    ]
    assert day_total("status:sync:2xx") == 2
    assert day_total("status:moved:3xx") == 1
    assert day_total("status:missing:4xx") == 1
    assert day_total("status:broken:5xx") == 1
    assert day_total("status:sync:5xx") == 0
    assert day_total("hits") == 5


def test_a_raising_async_view_counts_as_a_server_error(single: Any, with_middleware: Any) -> None:
    assert aget("/async-broken/") == 500
    assert aget("/async/") == 200
    assert day_total("status:async-broken:5xx") == 1
    assert day_total("status:async:2xx") == 1


def test_unresolved_requests_share_one_status_counter(single: Any, with_middleware: Any) -> None:
    assert get("/no/such/page/") == 404
    assert get("/nor/this/") == 404
    assert day_total("status:unresolved:4xx") == 2


def test_times_the_response_in_milliseconds(backend: Any, with_middleware: Any) -> None:
    for seconds in ("0.06", "0.02", "0.04"):
        assert get(f"/slow/?seconds={seconds}") == 200
    summary = latency("slow").summary(60)
    assert summary["count"] == 3
    # Lower bounds only: the view sleeps at least that long, a loaded machine adds to it.
    assert summary["min"] >= 20
    assert summary["max"] >= 60
    assert summary["sum"] >= 120
    assert summary["min"] < summary["max"]


def test_times_async_views_and_views_that_raise(single: Any, with_middleware: Any) -> None:
    assert aget("/async-slow/?seconds=0.05") == 200
    assert get("/broken/") == 500
    slow = latency("async-slow").summary(60)
    assert slow["count"] == 1 and slow["min"] >= 50
    assert latency("broken").summary(60)["count"] == 1


def test_names_before_labels_are_settings_and_none_turns_them_off(
    single: Any, with_middleware: Any, settings: Any
) -> None:
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "VIEW_STATUS": "answers:{class}:{view}",
        "VIEW_TIMER": None,
    }
    assert get("/sync/") == 200
    assert day_total("answers:2xx:sync") == 1
    assert not Statistic("latency:sync").exists()
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "VIEW_STATUS": None,
        "VIEW_TIMER": "time:{view}",
    }
    assert get("/sync/") == 200
    assert day_total("answers:2xx:sync") == 1
    assert Statistic("time:sync").summary(60)["count"] == 1
    assert latency("sync").summary(60)["count"] == 2  # the labelled statistic, as always


def test_views_past_the_cap_share_the_other_metrics(
    single: Any, with_middleware: Any, settings: Any
) -> None:
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "MAX_VIEW_COUNTERS": 1}
    for path in ("/sync/", "/missing/", "/slow/?seconds=0"):
        get(path)
    assert day_total("status:sync:2xx") == 1
    assert day_total("status:other:4xx") == 1
    assert day_total("status:other:2xx") == 1
    assert latency("other").summary(60)["count"] == 2
    assert not latency("missing").exists()
    assert not Statistic("latency:other").exists()  # no name of the versions before labels


def test_still_one_round_trip_per_request(
    single: Any, with_middleware: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    get("/sync/")  # connection handshake, script loading and admission happen once
    get("/missing/")
    get("/broken/")
    with counting_round_trips(monkeypatch) as sent:
        for path in ("/sync/", "/missing/", "/broken/"):
            sent.reset()
            get(path)
            assert sent.calls == 1, path
    assert latency("sync").summary(60)["count"] == 2
    assert latency("broken").summary(60)["count"] == 2


@pytest.mark.parametrize(
    ("status", "expected"),
    [(100, "2xx"), (200, "2xx"), (204, "2xx"), (301, "3xx"), (404, "4xx"), (503, "5xx")],
)
def test_status_classes(status: int, expected: str) -> None:
    assert status_class(status) == expected
