"""The Views page: per view, the figures equal what the models hold for requests served through
the middleware; sorting; links; bounded round trips; no data; single node and cluster."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from django_redis_metrics import Counter, Statistic
from django_redis_metrics.admin import common as admin_common
from django_redis_metrics.sending import sender

from ..django_site import admin_url, client_for, counting_round_trips, make_user

pytestmark = pytest.mark.django_db


def views_page() -> str:
    return admin_url("viewsmetric", "changelist")


def serve(paths: list[str]) -> None:
    """Requests through the middleware; their metrics written before returning."""
    client = Client(raise_request_exception=False)
    for path in paths:
        client.get(path)
    sender.flush()


def rows(response: Any) -> dict[str, Any]:
    assert response.status_code == 200
    return {row["view"]: row for row in response.context["rows"]}


HITS = Counter("hits", labels=("view", "status"))
LATENCY = Statistic("latency", labels=("view",))


def merged(statistic: Statistic, now: float) -> dict[str, Any]:
    """What the model holds for the last 60 one-minute slices, added up by hand."""
    found = [s for _, s in statistic.recent(60, 60, until=now) if s["count"]]
    count = sum(s["count"] for s in found)
    return {
        "count": count,
        "mean": sum(s["sum"] for s in found) / count,
        "max": max(s["max"] for s in found),
        "min": min(s["min"] for s in found),
        "slices": found,
    }


@pytest.fixture
def site(backend: Any, with_middleware: Any) -> Client:
    """Traffic through the middleware: a slow view, a 404, a 500, a redirect, a fast view."""
    serve(
        ["/slow/?seconds=0.08", "/slow/?seconds=0.03", "/slow/?seconds=0.05"]
        + ["/missing/"] * 2
        + ["/sync/"] * 3
        + ["/broken/", "/moved/"]
    )
    return client_for(make_user("analyst", staff=True, permitted=True))


def test_figures_equal_what_the_models_hold(site: Client) -> None:
    now = time.time()
    shown = rows(site.get(views_page()))
    assert {"slow", "missing", "sync", "broken", "moved"} <= set(shown)
    for view, requests in {"slow": 3, "missing": 2, "sync": 3, "broken": 1, "moved": 1}.items():
        hour, day = shown[view]["figures"]["hour"], shown[view]["figures"]["day"]
        held = merged(LATENCY.labels(view=view), now)
        assert hour.requests == day.requests == requests == held["count"]
        statuses = {c: HITS.labels(view=view, status=c).total(86400) for c in ("4xx", "5xx")}
        assert hour.client_errors == statuses["4xx"] and hour.server_errors == statuses["5xx"]
        assert hour.mean == pytest.approx(held["mean"]) and day.mean == pytest.approx(held["mean"])
        assert hour.max == held["max"] == day.max
        assert held["min"] <= hour.p95 <= held["max"]
        if len(held["slices"]) == 1:  # all in one minute: the merged p95 is that slice's
            assert hour.p95 == held["slices"][0]["p95"]
    assert shown["missing"]["figures"]["hour"].client_rate == 100.0
    assert shown["broken"]["figures"]["hour"].server_rate == 100.0
    assert shown["sync"]["figures"]["hour"].client_rate == 0.0
    assert shown["slow"]["figures"]["hour"].max >= 80


def test_slowest_first_by_default_and_sortable_by_each_column(site: Client) -> None:
    order = [row["view"] for row in site.get(views_page()).context["rows"]]
    assert order[0] == "slow"
    response = site.get(views_page() + "?o=view")
    assert [r["view"] for r in response.context["rows"]] == sorted(order)
    response = site.get(views_page() + "?o=-view")
    assert [r["view"] for r in response.context["rows"]] == sorted(order, reverse=True)
    for key in ("requests_hour", "client_day", "server_hour", "p95_day", "max_hour", "mean_day"):
        column, window = key.split("_")
        for sign in ("", "-"):
            shown = site.get(views_page() + f"?o={sign}{key}").context["rows"]
            attribute = {"client": "client_rate", "server": "server_rate"}.get(column, column)
            values = [getattr(r["figures"][window], attribute) for r in shown]
            known = [v for v in values if v is not None]
            assert known == sorted(known, reverse=sign == "-"), (key, sign, values)
            assert values[: len(known)] == known  # rows without the figure come last
    page = site.get(views_page() + "?o=-max_hour").content.decode()
    assert 'aria-sort="descending"' in page
    assert "?o=max_hour" in page  # a second click reverses the order
    assert site.get(views_page() + "?o=nonsense").context["order"] == "-mean_hour"


def test_each_row_links_to_its_charts(site: Client) -> None:
    slow = rows(site.get(views_page()))["slow"]
    """Each figure links to the chart of the series it comes from: its metric's page filtered
    by the series' labels."""
    chart = admin_url("statisticmetric", "chart")
    assert slow["url"] == f"{chart}?name=latency&view=slow"
    hour = slow["windows"][0]
    assert hour["timer_url"] == f"{chart}?name=latency&view=slow&precision=60"
    assert slow["windows"][1]["timer_url"].endswith("precision=3600")
    missing = rows(site.get(views_page()))["missing"]["windows"][0]
    counter_chart = admin_url("countermetric", "chart")
    assert missing["client_url"] == (
        f"{counter_chart}?name=hits&view=missing&status=4xx&precision=60"
    )
    assert hour["requests_url"] == f"{counter_chart}?name=hits&view=slow&status=2xx&precision=60"
    assert slow["windows"][1]["requests_url"].endswith("precision=3600")
    timer = site.get(hour["timer_url"])
    assert timer.status_code == 200 and timer.context["whole"]["count"] == 3
    assert site.get(hour["requests_url"]).status_code == 200
    client_errors = site.get(missing["client_url"])
    assert client_errors.status_code == 200
    assert client_errors.context["payload"]["total"] == 2


def test_the_page_says_what_each_window_covers(site: Client) -> None:
    response = site.get(views_page())
    notes = response.context["notes"]
    assert "Last hour, statistics: the newest 60 slices of 1 min" in " ".join(notes)
    assert "Last day, statistics: the newest 24 slices of 1 h" in " ".join(notes)
    assert b"Views" in response.content


def test_round_trips_are_bounded_whatever_the_number_of_views(
    single: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    now = time.time()
    monkeypatch.setattr(admin_common, "current_time", lambda: now)
    client = client_for(make_user("root", staff=True, permitted=False, superuser=True))

    def make(first: int, last: int) -> None:
        for i in range(first, last):
            LATENCY.labels(view=f"v{i}").record(i + 1, when=now)
            HITS.labels(view=f"v{i}", status="2xx").incr(when=now)
            Counter(f"status:v{i}:5xx").incr(when=now)  # written before labels: read too

    make(0, 2)
    with counting_round_trips(monkeypatch) as sent:
        assert client.get(views_page()).status_code == 200
        few = sent.calls
        make(2, 40)
        sent.reset()
        response = client.get(views_page())
        many = sent.calls
    assert len(response.context["rows"]) == 40
    assert many == few <= 3
    assert response.context["rows"][0]["view"] == "v39"  # the slowest


def test_a_site_that_just_upgraded_sees_before_and_after_added(
    single: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the middleware wrote per view before labels (``hits:{view}``,
    ``status:{view}:{class}``, ``latency:{view}``), no longer written, adds to the series."""
    settings.ROOT_URLCONF = "tests.integration.urls"
    now = time.time()
    monkeypatch.setattr(admin_common, "current_time", lambda: now)
    Counter("hits:home").incr(4, when=now)  # counted by the status counters too
    Counter("status:home:2xx").incr(3, when=now)
    Counter("status:home:5xx").incr(1, when=now)
    Counter("hits:legacy").incr(2, when=now)  # a site that counted no status classes
    Statistic("latency:home").record(10, when=now)
    HITS.labels(view="home", status="2xx").incr(5, when=now)
    HITS.labels(view="home", status="4xx").incr(2, when=now)
    LATENCY.labels(view="home").record(30, when=now)
    client = client_for(make_user("root", staff=True, permitted=False, superuser=True))
    shown = rows(client.get(views_page()))
    home = shown["home"]["figures"]["hour"]
    assert (home.requests, home.client_errors, home.server_errors) == (11, 2, 1)
    assert (home.timed, home.mean, home.max) == (2, 20.0, 30.0)
    assert shown["legacy"]["figures"]["day"].requests == 2
    assert shown["legacy"]["hits_url"].endswith("?name=hits%3Alegacy")


def test_no_data_says_so(single: Any, settings: Any) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    client = client_for(make_user("root", staff=True, permitted=False, superuser=True))
    response = client.get(views_page())
    assert response.status_code == 200
    assert response.context["rows"] == []
    assert b"No view has been recorded yet" in response.content


def test_the_admin_index_and_the_dashboard_link_the_views_page(site: Client) -> None:
    assert views_page().encode() in site.get(reverse("admin:index")).content
    dashboard = site.get(admin_url("dashboardmetric", "changelist"))
    slowest = next(t for t in dashboard.context["tiles"] if t["tile"].name == "slowest_views")
    assert slowest["context"]["views_url"] == views_page()
    assert b'class="drm-views-link"' in dashboard.content
