"""Active users marked by the middleware, @mark on every kind of view, the bitmap admin pages."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import User
from django.test import AsyncClient, Client

from django_redis_metrics import UniqueBitmap

from ..django_site import admin_url, flushed, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def site(single: Any, with_middleware: Any) -> Any:
    return with_middleware


def test_middleware_marks_signed_in_users_only(site: Any, alice: User) -> None:
    site.ROOT_URLCONF = "tests.integration.user_urls"
    flushed(Client().get("/whoami/"))
    assert not UniqueBitmap.objects.names()
    flushed(signed_in(alice).get("/whoami/"))
    flushed(signed_in(alice).get("/whoami/"))
    active = UniqueBitmap("active_users")
    assert active.count("day") == 1
    assert active.contains(alice.pk, "day")


def test_middleware_marks_users_of_async_views(site: Any, alice: User) -> None:
    site.ROOT_URLCONF = "tests.integration.user_urls"
    client = AsyncClient()
    client.force_login(alice)
    assert flushed(async_to_sync(client.get)("/awhoami/")).status_code == 200
    assert UniqueBitmap("active_users").contains(alice.pk, "week")


def test_middleware_never_loads_the_user_itself(site: Any, alice: User) -> None:
    """A view that never reads ``request.user`` costs no session or user query: not marked."""
    flushed(signed_in(alice).get("/sync/"))
    client = AsyncClient()
    client.force_login(alice)
    flushed(async_to_sync(client.get)("/async/"))
    assert not UniqueBitmap.objects.names()


def test_mark_on_function_async_and_class_based_views(site: Any, alice: User) -> None:
    flushed(signed_in(alice).get("/buy/"))
    flushed(Client().get("/buy/"))  # anonymous: nobody to mark
    assert UniqueBitmap("buyers").count("day") == 1
    client = AsyncClient()
    client.force_login(alice)
    flushed(async_to_sync(client.get)("/async-buy/"))
    assert UniqueBitmap("async_buyers").contains(alice.pk, "day")
    flushed(Client().get("/subscribe/", {"id": "17"}))
    flushed(Client().get("/subscribe/", {"id": "x"}))  # no id: nobody marked
    assert UniqueBitmap("subscribers").contains(17, "day")
    assert UniqueBitmap("subscribers").count("day") == 1


def test_bitmap_pages(analyst: Client, frozen: float) -> None:
    active = UniqueBitmap("active_users")
    now = frozen
    for user in (1, 2, 3):
        active.mark(user, when=now - 7 * 86400)
    for user in (1, 2):
        active.mark(user, when=now)
    listing = analyst.get(admin_url("uniquebitmapmetric", "changelist"))
    assert listing.status_code == 200
    assert listing.context["rows"][0]["counts"]["day"] == 2
    page = analyst.get(admin_url("uniquebitmapmetric", "detail") + "?name=active_users")
    assert page.status_code == 200
    charts = {chart["period"]: chart for chart in page.context["charts"]}
    assert set(charts) == {"day", "week", "month"}
    assert charts["day"]["rows"][0][1] == 2  # today
    assert page.context["cohort_period"] == "week"
    cohort = page.context["cohort"]
    assert len(cohort) == 2  # from the first week with users, not 6 empty weeks before it
    last_week, this_week = cohort[-2], cohort[-1]
    assert last_week["size"] == 3
    assert last_week["cells"][0] == (2, 67)  # 2 of 3 came back a week later
    assert this_week["size"] == 2
    daily = analyst.get(
        admin_url("uniquebitmapmetric", "detail"), {"name": "active_users", "cohort": "day"}
    )
    assert daily.context["cohort_period"] == "day"
    assert daily.context["cohort"][-1]["size"] == 2
    assert daily.context["cohort"][0]["size"] == 3  # a week ago: the first day with users
    assert daily.context["cohort"][0]["cells"][6] == (2, 67)  # +7 days: today
    assert (
        analyst.get(
            admin_url("uniquebitmapmetric", "detail"), {"name": "active_users", "cohort": "hour"}
        ).status_code
        == 404
    )
