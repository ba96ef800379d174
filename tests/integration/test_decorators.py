"""The view decorators on function, async and class-based views, with and without middleware."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.test import AsyncClient, Client

from django_redis_metrics import Counter, EventSeries, UniqueBitmap
from django_redis_metrics.decorators import count, mark, track_event
from django_redis_metrics.sending import sender

from ..django_site import counting_round_trips, view_hits, wait_for_a_failure

pytestmark = pytest.mark.django_db


@pytest.fixture(params=["with middleware", "alone"])
def site(request: pytest.FixtureRequest, single: Any, with_middleware: Any) -> Any:
    if request.param == "alone":
        with_middleware.MIDDLEWARE = [
            m for m in with_middleware.MIDDLEWARE if "MetricsMiddleware" not in m
        ]
    return with_middleware


def total(name: str) -> int:
    return Counter(name).total(86400)


def sync_get(path: str, method: str = "get", **data: Any) -> Any:
    response = getattr(Client(), method)(path, data)
    sender.flush()
    return response


def async_request(path: str, method: str = "get", **data: Any) -> Any:
    response = async_to_sync(getattr(AsyncClient(), method))(path, data)
    sender.flush()
    return response


def test_count_on_a_function_view(site: Any) -> None:
    assert sync_get("/signup/", "post").status_code == 200
    assert sync_get("/signup/", "post", fail="1").status_code == 400  # not counted
    assert total("signups") == 1


def test_count_on_an_async_view_with_an_amount_from_the_response(site: Any) -> None:
    assert async_request("/upload/", "post").content == b"stored"
    assert sync_get("/upload/", "post").status_code == 200
    assert total("uploads") == 6


def test_count_on_class_based_views(site: Any) -> None:
    assert sync_get("/checkout/").content == b"form"  # get is not decorated
    assert sync_get("/checkout/", "post").content == b"paid"
    assert total("checkouts") == 1
    assert async_request("/async-checkout/", "post").content == b"paid"
    assert total("async_checkouts") == 1


def test_decorated_request_still_costs_one_round_trip(
    single: Any, with_middleware: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    sync_get("/signup/", "post")
    with counting_round_trips(monkeypatch) as sent:
        sync_get("/signup/", "post")
        assert sent.calls == 1
    assert total("signups") == 2
    assert view_hits("signup") == 2


def test_decorators_fail_open(with_middleware: Any, caplog: pytest.LogCaptureFixture) -> None:
    with_middleware.DJANGO_REDIS_METRICS = {
        "CONNECTION": "redis://127.0.0.1:1/0",
        "FAIL_OPEN_TIMEOUT": 0.2,
    }
    sender.reset()
    with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
        assert Client().post("/signup/").status_code == 200  # no flush: Redis is away
        assert async_to_sync(AsyncClient().post)("/upload/").status_code == 200
        wait_for_a_failure()
    assert sender.sender.pending() == 2  # kept until Redis answers
    assert "Metrics writes are waiting" in caplog.text


def test_names_are_validated_when_decorating() -> None:
    with pytest.raises(ValueError, match="braces"):
        count("a{b}")
    with pytest.raises(TypeError):
        track_event(42)  # type: ignore[arg-type]


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_declared_metrics_are_written_with_their_own_configuration(site: Any) -> None:
    assert sync_get("/declared/").content == b"declared"
    assert Counter.objects.get("minutely_signups").precisions == (60, 3600)
    assert UniqueBitmap.objects.get("hourly_visitors").periods == ("hour", "day")
    assert UniqueBitmap("hourly_visitors", periods=("hour",)).count("hour") == 1
    orders = EventSeries.objects.get("short_orders")
    assert (orders.index, orders.retention) == (("country",), 3600)
    assert dict(orders.count_by("country", 0, 2**33)) == {"FR": 1}


def test_a_metric_of_another_kind_or_a_second_index_is_refused_when_decorating() -> None:
    with pytest.raises(TypeError, match="Expected a UniqueBitmap or a bitmap name"):
        mark(Counter("signups"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Expected a Counter"):
        count(EventSeries("orders"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="brings its own index"):
        track_event(EventSeries("orders", index=["country"]), index=["product"])


def test_an_unresolved_request_is_labelled_with_the_unresolved_view_setting(
    single: Any, fresh_state: None, metrics_settings: Any
) -> None:
    """Like the middleware, track_event names a request that resolved to no view (one made by
    a RequestFactory, or served by another middleware) ``UNRESOLVED_VIEW``."""
    from django.http import HttpResponse
    from django.test import RequestFactory

    metrics_settings(UNRESOLVED_VIEW="nowhere")

    @track_event("unrouted")
    def view(request: Any) -> HttpResponse:
        return HttpResponse("ok")

    view(RequestFactory().get("/anywhere/"))
    sender.flush()
    (event,) = EventSeries("unrouted").between(0, 2**33)
    assert event["view"] == "nowhere"


def test_an_async_view_marks_a_user_set_on_the_request_without_auth_middleware(
    single: Any, fresh_state: None
) -> None:
    from django.contrib.auth.models import User
    from django.http import HttpResponse
    from django.test import AsyncRequestFactory

    @mark("async_buyers")
    async def view(request: Any) -> HttpResponse:
        return HttpResponse("ok")

    request = AsyncRequestFactory().get("/")
    request.user = User(pk=7, username="seven")  # no request.auser(): no auth middleware
    assert async_to_sync(view)(request).status_code == 200
    sender.flush()
    assert UniqueBitmap("async_buyers").count("day") == 1
