"""The Alerts page (each alert's state, value, threshold and recent transitions, firing
first) and the dashboard's banner of firing alerts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from django_redis_metrics import Alert, Counter, Statistic
from django_redis_metrics.alerts import evaluate, forget, register

from ..django_site import admin_url, client_for, counting_round_trips, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def alerts(single: Any) -> Iterator[list[Alert]]:
    """Three alerts, evaluated twice: "5xx spike" firing, "slow" pending, "quiet" normal."""
    forget()
    now = time.time()
    hits = Counter("hits", precisions=[60], samples=10, labels=("view", "status"))
    errors = hits.labels(view="home", status="5xx")
    errors.incr(12, when=now - 1)
    latency = Statistic("latency", precisions=[60], samples=10)
    latency.record(900, when=now - 1)
    found = [
        register(Alert("5xx spike", errors, above=10, over=300, for_=60)),
        register(Alert("slow", latency, measure="p95", above=500, over=300, for_=600)),
        register(Alert("quiet", hits, below=1, over=300)),
    ]
    evaluate(now)
    evaluate(now + 60)
    yield found
    forget()


def test_the_alerts_page_shows_each_state_value_threshold_and_transitions(
    analyst: Client, alerts: list[Alert]
) -> None:
    response = analyst.get(admin_url("alertsmetric", "changelist"))
    assert response.status_code == 200
    rows = response.context["rows"]
    assert [(r["name"], r["state"]) for r in rows] == [
        ("5xx spike", "firing"),
        ("slow", "pending"),
        ("quiet", "normal"),
    ]
    spike = rows[0]
    assert (spike["value"], spike["threshold"], spike["over"], spike["for"]) == (
        12,
        "> 10",
        "5 min",
        "1 min",
    )
    assert [(h["from"], h["to"]) for h in spike["history"]] == [
        ("pending", "firing"),
        ("normal", "pending"),
    ]
    html = response.content.decode()
    assert '<tr data-alert="5xx spike" data-state="firing">' in html
    assert "counter hits view=home status=5xx, over 5 min" in html
    assert "pending → firing (12)" in html
    assert rows[1]["value"] == pytest.approx(900, rel=0.05)


def test_the_alerts_page_obeys_the_permission_and_says_how_to_declare(
    single: Any, settings: Any
) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    forget()
    clerk = client_for(make_user("clerk", staff=True, permitted=False))
    assert clerk.get(admin_url("alertsmetric", "changelist")).status_code == 403
    analyst = client_for(make_user("analyst", staff=True, permitted=True))
    html = analyst.get(admin_url("alertsmetric", "changelist")).content.decode()
    assert "No alert is declared" in html


def test_the_dashboard_shows_the_firing_alerts_in_its_three_round_trips(
    analyst: Client, alerts: list[Alert], monkeypatch: pytest.MonkeyPatch
) -> None:
    with counting_round_trips(monkeypatch) as counted:
        response = analyst.get(admin_url("dashboardmetric", "changelist"))
    assert counted.calls <= 3  # the banner's read goes in the tiles' first round trip
    assert [row["name"] for row in response.context["firing_alerts"]] == ["5xx spike"]
    html = response.content.decode()
    assert '<div class="drm-alert-banner" id="firing-alerts" role="alert">' in html
    assert "1 alert firing:" in html
    forget()
    response = analyst.get(admin_url("dashboardmetric", "changelist"))
    assert (
        response.context["firing_alerts"] == [] and "firing-alerts" not in response.content.decode()
    )
