"""The admin's Metrics section: who may see it, what it shows, and that names are escaped."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.urls import NoReverseMatch, reverse

from django_redis_metrics import Counter

from ..django_site import admin_url, client_for, make_user

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"


#: Every page and JSON endpoint of the section, with a query naming a metric where needed.
PAGES = [
    ("countermetric", "changelist", ""),
    ("countermetric", "chart", "?name=hits"),
    ("countermetric", "data", "?name=hits&precision=60"),
    ("eventseriesmetric", "changelist", ""),
    ("eventseriesmetric", "detail", "?name=orders"),
    ("eventseriesmetric", "data", "?name=orders&window=300"),
    ("uniquebitmapmetric", "changelist", ""),
    ("uniquebitmapmetric", "detail", "?name=active_users"),
    ("uniquebitmapmetric", "data", "?name=active_users&period=day"),
    ("dashboardmetric", "changelist", ""),
    ("viewsmetric", "changelist", ""),
    ("statisticmetric", "changelist", ""),
    ("statisticmetric", "chart", "?name=latency:home"),
    ("statisticmetric", "data", "?name=latency:home&precision=60"),
    ("gaugemetric", "changelist", ""),
    ("gaugemetric", "chart", "?name=queue"),
    ("gaugemetric", "data", "?name=queue&precision=60"),
    ("uniqueestimatemetric", "changelist", ""),
    ("uniqueestimatemetric", "detail", "?name=visitors"),
    ("uniqueestimatemetric", "data", "?name=visitors&period=day"),
]


@pytest.fixture
def admin_site(single: Any, settings: Any, frozen: float) -> Any:
    settings.ROOT_URLCONF = "tests.integration.urls"
    Counter("hits", precisions=[1, 60, 3600, 86400]).incr(5, when=frozen)
    return settings


@pytest.mark.parametrize(("model", "suffix", "query"), PAGES)
def test_anonymous_users_are_sent_to_the_login_page(
    admin_site: Any, model: str, suffix: str, query: str
) -> None:
    response = client_for(None).get(admin_url(model, suffix) + query)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.parametrize(("model", "suffix", "query"), PAGES)
def test_non_staff_users_are_refused_even_with_the_permission(
    admin_site: Any, model: str, suffix: str, query: str
) -> None:
    user = make_user("visitor", staff=False, permitted=True)
    response = client_for(user).get(admin_url(model, suffix) + query)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("admin:login"))


@pytest.mark.parametrize(("model", "suffix", "query"), PAGES)
def test_staff_without_the_permission_are_refused(
    admin_site: Any, model: str, suffix: str, query: str
) -> None:
    user = make_user("clerk", staff=True, permitted=False)
    response = client_for(user).get(admin_url(model, suffix) + query)
    assert response.status_code == 403
    assert b"hits" not in response.content


def test_section_is_in_the_admin_index_only_with_the_permission(admin_site: Any) -> None:
    allowed = client_for(make_user("analyst", staff=True, permitted=True)).get(
        reverse("admin:index")
    )
    assert allowed.status_code == 200
    assert b"Metrics" in allowed.content
    assert admin_url("countermetric", "changelist").encode() in allowed.content
    assert admin_url("uniquebitmapmetric", "changelist").encode() in allowed.content
    refused = client_for(make_user("clerk", staff=True, permitted=False)).get(
        reverse("admin:index")
    )
    assert admin_url("countermetric", "changelist").encode() not in refused.content


def test_counter_list_shows_sparklines_and_totals(admin_site: Any, frozen: float) -> None:
    Counter("signups", precisions=[1, 60]).incr(2, when=frozen)
    user = make_user("analyst", staff=True, permitted=True)
    response = client_for(user).get(admin_url("countermetric", "changelist"))
    assert response.status_code == 200
    rows = {row.name: row for row in response.context["rows"]}
    assert set(rows) == {"hits", "signups"}
    assert rows["hits"].totals == [5, 5, 5]
    assert rows["signups"].totals == [2, 2, None]  # no precision fits a day in 120 samples
    assert sum(rows["hits"].sparkline) == 5
    assert response.content.count(b'class="drm-sparkline"') == 2


def test_counter_chart_and_its_json_endpoint(admin_site: Any, frozen: float) -> None:
    client = client_for(make_user("root", staff=True, permitted=False, superuser=True))
    page = client.get(admin_url("countermetric", "chart") + "?name=hits&precision=1")
    assert page.status_code == 200
    assert b'id="counter-chart-data"' in page.content
    assert b"django_redis_metrics/vendor/uplot/uPlot.iife.min.js" in page.content
    assert b"django_redis_metrics/charts.js" in page.content
    data = client.get(admin_url("countermetric", "data") + "?name=hits&precision=60").json()
    assert data["name"] == "hits"
    assert data["step"] == 60
    assert data["caption"] == "hits per minute"
    assert len(data["x"]) == len(data["series"][0]["values"]) == 120  # zero-filled
    starts = data["x"]
    assert all(start % 60 == 0 for start in starts)
    assert starts == sorted(starts) and starts[-1] == int(frozen) // 60 * 60
    assert data["total"] == 5
    missing = client.get(admin_url("countermetric", "data") + "?name=hits&precision=7")
    assert missing.status_code == 404
    assert client.get(admin_url("countermetric", "chart") + "?name=nothing").status_code == 404


def test_metric_names_are_escaped_everywhere(admin_site: Any) -> None:
    Counter(XSS).incr(3)
    client = client_for(make_user("root", staff=True, permitted=False, superuser=True))
    for response in (
        client.get(admin_url("countermetric", "changelist")),
        client.get(admin_url("countermetric", "chart") + "?name=%3Cscript%3Ealert(1)%3C/script%3E"),
    ):
        assert response.status_code == 200
        assert XSS.encode() not in response.content
        assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in response.content
    data = client.get(
        admin_url("countermetric", "data") + "?name=%3Cscript%3Ealert(1)%3C/script%3E&precision=60"
    )
    assert json.loads(data.content)["name"] == XSS
    assert data["Content-Type"] == "application/json"


def test_counter_pages_on_a_single_node_and_on_redis_cluster(
    backend: Any, settings: Any, frozen: float
) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    for name in ("a", "b", "c"):
        Counter(name, precisions=[60, 3600]).incr(2, when=frozen)
    client = client_for(make_user("root", staff=True, permitted=False, superuser=True))
    listing = client.get(admin_url("countermetric", "changelist"))
    assert [(row.name, row.totals) for row in listing.context["rows"]] == [
        ("a", [2, 2, 2]),
        ("b", [2, 2, 2]),
        ("c", [2, 2, 2]),
    ]
    data = client.get(admin_url("countermetric", "data") + "?name=b&precision=3600").json()
    assert data["total"] == 2


#: Django's default object URLs of a ModelAdmin; the metrics models have no table behind them.
DEFAULT_OBJECT_PATHS = ["add/", "1/", "1/change/", "1/history/", "1/delete/", "autocomplete/"]
MODELS = [
    "countermetric",
    "eventseriesmetric",
    "uniquebitmapmetric",
    "dashboardmetric",
    "viewsmetric",
    "statisticmetric",
    "gaugemetric",
    "uniqueestimatemetric",
    "funnelmetric",
]


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("kind", ["clerk", "analyst", "root"])
def test_default_object_urls_are_not_served(admin_site: Any, model: str, kind: str) -> None:
    """No staff user, with or without the permission, reaches a view that queries the missing
    table (it was HTTP 500, "no such table"); anonymous users are sent to the login page."""
    user = make_user(kind, staff=True, permitted=kind == "analyst", superuser=kind == "root")
    staff, anonymous = client_for(user), client_for(None)
    base = admin_url(model, "changelist")
    for suffix in DEFAULT_OBJECT_PATHS:
        response = staff.get(base + suffix)
        assert response.status_code in (403, 404), (suffix, response.status_code)
        response = anonymous.get(base + suffix)
        assert response.status_code == 302, suffix
        assert response["Location"].startswith(reverse("admin:login"))
    for name in ("add", "change", "history", "delete"):
        with pytest.raises(NoReverseMatch):
            reverse(f"admin:django_redis_metrics_{model}_{name}", args=[1] if name != "add" else [])
