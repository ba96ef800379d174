"""@track_event through the middleware and alone, one round trip, the event series pages."""

from __future__ import annotations

import time
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import AsyncClient, Client

from django_redis_metrics import EventSeries, UniqueBitmap

from ..admin.test_admin import XSS
from ..django_site import admin_url, counting_round_trips, flushed, signed_in, view_hits

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(single: Any, with_middleware: Any) -> Any:
    return with_middleware


# Middleware


def test_everything_a_request_records_is_one_round_trip(
    site: Any, alice: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    client = signed_in(alice)
    flushed(client.get("/download/a.pdf/"))
    with counting_round_trips(monkeypatch) as sent:
        flushed(client.get("/download/b.pdf/"))  # 2 counters, 1 mark, 1 event
        assert sent.calls == 1
    assert EventSeries("downloads").size() == 2
    assert view_hits("download") == 2


# Decorators


def test_track_event_on_a_function_view_records_only_what_it_is_told(
    site: Any, alice: User
) -> None:
    flushed(signed_in(alice).get("/download/report.pdf/?token=secret", HTTP_AUTHORIZATION="x"))
    (event,) = EventSeries("downloads").latest(1)
    assert {k: v for k, v in event.items() if k not in ("id", "timestamp")} == {
        "view": "download",
        "file": "report.pdf",
        "user": alice.pk,
    }
    assert EventSeries("downloads", index=["file"]).count_by("file", 0, time.time()) == {
        "report.pdf": 1
    }


def test_track_event_by_default_records_no_request_data(site: Any) -> None:
    flushed(
        Client().post(
            "/login-form/?next=/x/",
            {"username": "bob", "password": "hunter2"},
            HTTP_AUTHORIZATION="Bearer t0ken",
        )
    )
    (event,) = EventSeries("logins").latest(1)
    assert {k: v for k, v in event.items() if k not in ("id", "timestamp")} == {
        "view": "login-form"
    }


def test_track_event_on_an_async_view(site: Any) -> None:
    flushed(async_to_sync(AsyncClient().get)("/search/", {"q": "mugs"}))
    (event,) = EventSeries("searches").latest(1)
    assert event["q"] == "mugs"


def test_decorators_work_without_the_middleware(
    single: Any, with_middleware: Any, alice: User
) -> None:
    with_middleware.MIDDLEWARE = [
        m for m in with_middleware.MIDDLEWARE if "MetricsMiddleware" not in m
    ]
    flushed(signed_in(alice).get("/buy/"))
    flushed(Client().get("/download/x.txt/"))
    assert UniqueBitmap("buyers").contains(alice.pk, "day")
    assert EventSeries("downloads").size() == 1
    assert not UniqueBitmap("active_users").count("day")


# Admin pages


def test_event_series_pages(analyst: Client, frozen: float) -> None:
    orders = EventSeries("orders", index=["country"])
    now = frozen
    for i, country in enumerate(["FR", "FR", "DE"]):
        orders.record(when=now - 60 * i, country=country, total="9.90")
    listing = analyst.get(admin_url("eventseriesmetric", "changelist"))
    assert listing.status_code == 200
    assert [row["series"].name for row in listing.context["rows"]] == ["orders"]
    assert listing.context["rows"][0]["hour"] == 3
    page = analyst.get(admin_url("eventseriesmetric", "detail") + "?name=orders&window=60")
    assert page.status_code == 200
    assert page.context["by_field"][0]["values"] == [("FR", 2), ("DE", 1)]
    assert len(page.context["newest"]) == 3
    data = analyst.get(admin_url("eventseriesmetric", "data") + "?name=orders&window=60").json()
    assert len(data["x"]) == len(data["series"][0]["values"]) == 60 and data["total"] == 3
    assert all(start % 60 == 0 for start in data["x"])
    assert data["caption"] == "orders per minute"
    assert (
        analyst.get(admin_url("eventseriesmetric", "data") + "?name=orders&window=7").status_code
        == 404
    )


def test_event_and_bitmap_names_and_values_are_escaped(analyst: Client) -> None:
    EventSeries(XSS, index=["tag"]).record(tag=XSS, note=XSS)
    UniqueBitmap(XSS).mark(1)
    for page in (
        analyst.get(admin_url("eventseriesmetric", "changelist")),
        analyst.get(admin_url("eventseriesmetric", "detail"), {"name": XSS}),
        analyst.get(admin_url("uniquebitmapmetric", "changelist")),
        analyst.get(admin_url("uniquebitmapmetric", "detail"), {"name": XSS}),
    ):
        assert page.status_code == 200
        assert XSS.encode() not in page.content
        assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in page.content
