"""The admin's list pages page through querysets: a page costs the same whatever the number of
metrics, searched by name (within it, or by prefix with ``^``), ordered by the server."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from django_redis_metrics import Batch, Counter, Gauge, Statistic
from django_redis_metrics.core.queries import declared

from ..django_site import admin_url, client_for, counting_round_trips, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(single: Any, settings: Any, frozen: float, metrics_settings: Any) -> Client:
    settings.ROOT_URLCONF = "tests.integration.urls"
    metrics_settings(ADMIN_PAGE_SIZE=10)
    return client_for(make_user("root", staff=True, permitted=False, superuser=True))


def make_counters(first: int, last: int, frozen: float) -> None:
    with Batch() as batch:
        for index in range(first, last):
            Counter(f"api.{index:03}", precisions=[60, 3600]).incr(when=frozen, batch=batch)


def names(response: Any) -> list[str]:
    assert response.status_code == 200
    return [row.name for row in response.context["rows"]]


def test_a_page_costs_the_same_for_30_or_300_counters(
    root: Client, monkeypatch: pytest.MonkeyPatch, frozen: float
) -> None:
    make_counters(0, 30, frozen)
    url = admin_url("countermetric", "changelist") + "?p=2"
    root.get(url)
    with counting_round_trips(monkeypatch) as few:
        assert names(root.get(url)) == [f"api.{i:03}" for i in range(10, 20)]
    make_counters(30, 300, frozen)
    with counting_round_trips(monkeypatch) as many:
        response = root.get(url)
    assert names(response) == [f"api.{i:03}" for i in range(10, 20)]
    assert response.context["count"] == 300
    assert many.calls == few.calls <= 4


def test_search_within_names_by_prefix_and_descending(root: Client, frozen: float) -> None:
    make_counters(0, 25, frozen)
    Counter("other.api.5", precisions=[60]).incr(when=frozen)
    url = admin_url("countermetric", "changelist")
    found = root.get(url + "?q=API.01")  # within names, ignoring case, as it always did
    assert names(found) == [f"api.{i:03}" for i in range(10, 20)]
    assert found.context["count"] == 10
    prefixed = root.get(url + "?q=%5Eapi.02")  # ^: names starting with it
    assert names(prefixed) == [f"api.{i:03}" for i in range(20, 25)]
    assert prefixed.context["count"] == 5
    assert names(root.get(url + "?q=%5Eother")) == ["other.api.5"]
    backwards = root.get(url + "?o=-name")
    assert names(backwards)[:2] == ["other.api.5", "api.024"]
    assert b"o=-name&amp;p=2" in backwards.content  # the paginator keeps the order
    assert names(root.get(url + "?q=a%1Fb")) == []  # no name can hold it


def test_series_and_declared_metrics_are_listed(root: Client, frozen: float) -> None:
    hits = Counter("hits", precisions=[60, 3600], labels=("view",))
    hits.labels(view="home").incr(2, when=frozen)
    declared.declare(Gauge("queue"))
    try:
        page = root.get(admin_url("countermetric", "changelist"))
        assert names(page) == ["hits\x1fview=home"]
        assert b"hits{view=home}" in page.content
        chart = root.get(admin_url("countermetric", "chart"), {"name": "hits\x1fview=home"})
        assert chart.status_code == 200
        latency = Statistic("latency", precisions=[60], labels=("view",))
        latency.labels(view="shop").record(12, when=frozen)
        statistics = root.get(admin_url("statisticmetric", "changelist"))
        assert b"latency{view=shop}" in statistics.content
        chart = root.get(admin_url("statisticmetric", "chart"), {"name": "latency\x1fview=shop"})
        assert chart.status_code == 200
        gauges = root.get(admin_url("gaugemetric", "changelist")).context["rows"]
        assert [(row["gauge"].name, row["value"]) for row in gauges] == [("queue", None)]
    finally:
        declared.forget()
