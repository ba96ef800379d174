"""The Prometheus exposition: what it serves, parsed as Prometheus parses it, and who reads it."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)
from prometheus_client.parser import text_string_to_metric_families

from django_redis_metrics import Counter, Gauge, Statistic, UniqueBitmap, UniqueEstimate

from ..django_site import client_for, make_user

pytestmark = pytest.mark.django_db

TOKEN = "s3cret-token-for-the-scraper"


@pytest.fixture
def exposition(settings: Any, backend: Any) -> str:
    settings.ROOT_URLCONF = "tests.integration.urls"
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "EXPORT_TOKEN": TOKEN}
    return reverse("django_redis_metrics:prometheus")


def scrape(url: str, **headers: str) -> Any:
    return Client().get(url, headers={"Authorization": f"Bearer {TOKEN}", **headers})


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_counters_and_bitmaps_are_served_with_what_redis_holds(exposition: str) -> None:
    Counter("signups", precisions=[1], samples=2).incr(3, when=1_000)
    Counter("signups", precisions=[1], samples=2).incr(4)  # trims the old slice away
    Counter("hits").incr()
    visitors = UniqueBitmap("visitors", periods=("day", "month"))
    for user in (1, 2, 3):
        visitors.mark(user)
    searches = UniqueEstimate("searchers", periods=("day",))
    for item in ("a", "b", "a", 7, "c"):
        searches.add(item)
    response = scrape(exposition)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    found = samples(response.content.decode())
    assert found[("django_redis_metrics_counter_total", (("metric", "signups"),))] == 7
    assert Counter("signups", precisions=[1]).total(1) == 4
    assert found[("django_redis_metrics_counter_total", (("metric", "hits"),))] == 1
    users = "django_redis_metrics_unique_users"
    assert found[(users, (("metric", "visitors"), ("period", "day")))] == 3
    assert found[(users, (("metric", "visitors"), ("period", "month")))] == 3
    estimated = "django_redis_metrics_unique_estimate"
    assert found[(estimated, (("metric", "searchers"), ("period", "day")))] == 4


def test_openmetrics_when_the_scraper_asks(exposition: str) -> None:
    Counter("hits").incr(2)
    response = scrape(exposition, Accept="application/openmetrics-text; version=1.0.0")
    assert response["Content-Type"].startswith("application/openmetrics-text")
    text = response.content.decode()
    assert text.endswith("# EOF\n")
    families = {f.name: f for f in openmetrics_families(text)}
    (sample,) = families["django_redis_metrics_counter"].samples
    assert sample.labels == {"metric": "hits"} and sample.value == 2


def test_closed_without_a_token(exposition: str) -> None:
    response = Client().get(exposition)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"


def test_closed_with_a_wrong_token(exposition: str) -> None:
    response = Client().get(exposition, headers={"Authorization": "Bearer not-the-token-at-all"})
    assert response.status_code == 401
    assert "invalid_token" in response["WWW-Authenticate"]


def test_a_token_opens_nothing_when_none_is_set(exposition: str, settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "EXPORT_TOKEN": None}
    assert scrape(exposition).status_code == 401
    assert Client().get(exposition, headers={"Authorization": "Bearer "}).status_code == 401


def test_staff_need_the_permission(exposition: str) -> None:
    Counter("hits").incr()
    assert (
        client_for(make_user("eve", staff=False, permitted=False)).get(exposition).status_code
        == 403
    )
    assert (
        client_for(make_user("mallory", staff=True, permitted=False)).get(exposition).status_code
        == 403
    )
    allowed = client_for(make_user("olga", staff=True, permitted=True)).get(exposition)
    assert allowed.status_code == 200
    assert b'django_redis_metrics_counter_total{metric="hits"} 1.0' in allowed.content


def test_gauges_and_statistics_are_served_with_what_redis_holds(exposition: str) -> None:
    Gauge("queue").set(7, when=1_000)
    Gauge("queue").set(3)
    Gauge("queue").set(99, when=2_000)  # a backfill: older than the latest
    latency = Statistic("latency:home", precisions=[60, 3600])
    values = [12.0, 30.5, 7.25, 120.0, 45.0]
    for value in values:
        latency.record(value)
    latency.record(1000, when=500)  # an old slice: in the totals, not in the quantiles
    found = samples(scrape(exposition).content.decode())
    assert found[("django_redis_metrics_gauge", (("metric", "queue"),))] == 3
    home = (("metric", "latency:home"),)
    assert found[("django_redis_metrics_statistic_count", home)] == 6
    assert found[("django_redis_metrics_statistic_sum", home)] == sum(values) + 1000
    summary = latency.summary(60)
    for quantile, key in (("0.5", "p50"), ("0.95", "p95"), ("0.99", "p99")):
        labels = (*home, ("quantile", quantile))
        assert found[("django_redis_metrics_statistic", labels)] == summary[key]
    assert 30.5 / 1.05 <= summary["p50"] <= 30.5 * 1.05


def test_statistics_parse_as_openmetrics_summaries(exposition: str) -> None:
    Statistic("latency:a").record(5)
    Statistic("latency:b").record(8)
    response = scrape(exposition, Accept="application/openmetrics-text; version=1.0.0")
    families = {f.name: f for f in openmetrics_families(response.content.decode())}
    family = families["django_redis_metrics_statistic"]
    assert family.type == "summary"
    counts = {s.labels["metric"]: s.value for s in family.samples if s.name.endswith("_count")}
    assert counts == {"latency:a": 1, "latency:b": 1}


def test_redis_away_is_a_503(exposition: str, settings: Any) -> None:
    from django_redis_metrics.core.connection import reset_connections

    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "CONNECTION": "redis://127.0.0.1:1/0",
        "CLUSTER": False,
    }
    reset_connections()
    assert scrape(exposition).status_code == 503
