"""The Statistic, Gauge and UniqueEstimate pages: lists, charts and JSON/CSV data equal what
the models hold, on a single node and on Redis Cluster; list pages cost bounded round trips."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.test import Client

from django_redis_metrics import Gauge, Statistic, UniqueEstimate
from django_redis_metrics.admin.health_tiles import statistic_url

from .conftest import admin_url, client_for, counting_round_trips, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(backend: Any, settings: Any, frozen: float) -> Client:
    settings.ROOT_URLCONF = "tests.integration.urls"
    return client_for(make_user("root", staff=True, permitted=False, superuser=True))


def test_statistic_list_shows_the_last_hour_merged(root: Client, frozen: float) -> None:
    stat = Statistic("latency:home")
    for value, ago in ((10, 0), (30, 0), (50, 600), (7000, 2 * 3600)):  # the last: too old
        stat.record(value, when=frozen - ago)
    Statistic("sizes", precisions=[1]).record(3, when=frozen)  # no precision covers an hour
    response = root.get(admin_url("statisticmetric", "changelist"))
    assert response.status_code == 200
    shown = {row["statistic"].name: row["summary"] for row in response.context["rows"]}
    assert shown["sizes"] is None
    assert shown["latency:home"]["count"] == 3
    assert shown["latency:home"]["mean"] == pytest.approx(30)
    assert shown["latency:home"]["max"] == 50
    assert b"no precision covers an hour" in response.content


def test_statistic_chart_and_data_equal_the_model(root: Client, frozen: float) -> None:
    stat = Statistic("latency:shop")
    for value, ago in ((100, 0), (300, 0), (20, 120), (40, 120), (60, 120)):
        stat.record(value, when=frozen - ago)
    page = root.get(statistic_url("latency:shop"))  # the dashboard's link
    assert page.status_code == 200
    assert b'id="statistic-chart-data"' in page.content
    assert page.context["whole"]["count"] == 5
    assert page.context["whole"]["max"] == 300
    data = root.get(admin_url("statisticmetric", "data") + "?name=latency:shop&precision=60")
    payload = data.json()
    held = dict(stat.recent(60, 120, until=frozen))
    assert payload["x"] == list(held)
    mean, low, high = payload["series"]
    assert mean["values"] == [s["mean"] for s in held.values()]
    assert low["values"] == [s["p50"] for s in held.values()]
    assert high["values"] == [s["p95"] for s in held.values()]
    assert [mean["band"], low["band"], high["band"]] == [None, "low", "high"]
    assert low["label"].startswith("p50") and high["label"].startswith("p95")
    assert payload["integer"] is False and payload["unit"] == "ms"
    assert mean["values"][-1] == 200 and mean["values"][-3] == 40 and mean["values"][0] is None
    exported = root.get(admin_url("statisticmetric", "data") + "?name=latency:shop&format=csv")
    table = list(csv.reader(io.StringIO(exported.content.decode())))
    assert table[0][0] == "start" and table[0][-1] == "value"
    assert [float(row[-1]) for row in table[1:] if row[-1]] == [40, 200]
    assert (
        root.get(
            admin_url("statisticmetric", "data") + "?name=latency:shop&precision=7"
        ).status_code
        == 404
    )
    assert root.get(admin_url("statisticmetric", "chart") + "?name=nothing").status_code == 404


def test_gauge_list_chart_and_data_equal_the_model(root: Client, frozen: float) -> None:
    gauge = Gauge("queue", precisions=[60, 3600])
    for value, ago in ((5, 130), (9, 125), (2, 120), (7, 1)):
        gauge.set(value, when=frozen - ago)
    listing = root.get(admin_url("gaugemetric", "changelist"))
    assert [(r["gauge"].name, r["value"]) for r in listing.context["rows"]] == [("queue", 7.0)]
    chart = root.get(admin_url("gaugemetric", "chart") + "?name=queue")
    assert chart.status_code == 200
    assert chart.context["current"] == gauge.get() == 7.0  # the page says the value now
    assert 'id="gauge-current" data-value="7.0"' in chart.content.decode()
    payload = root.get(admin_url("gaugemetric", "data") + "?name=queue&precision=60").json()
    last, low, high = payload["series"]
    shown = {
        x: (a, b, c)
        for x, a, b, c in zip(
            payload["x"], last["values"], low["values"], high["values"], strict=True
        )
        if a is not None
    }
    held = {start: (s["last"], s["min"], s["max"]) for start, s in gauge.series(60)}
    assert shown == held
    assert (low["band"], high["band"]) == ("low", "high")


def test_estimate_list_detail_and_data_equal_the_model(root: Client, frozen: float) -> None:
    visitors = UniqueEstimate("visitors")
    for item in range(200):
        visitors.add(f"user{item}", when=frozen)
    visitors.add("yesterday", when=frozen - 86400)
    listing = root.get(admin_url("uniqueestimatemetric", "changelist"))
    (row,) = listing.context["rows"]
    assert row["counts"] == {p: visitors.count(p, frozen) for p in ("day", "week", "month")}
    detail = root.get(admin_url("uniqueestimatemetric", "detail") + "?name=visitors")
    assert detail.status_code == 200
    assert [c["period"] for c in detail.context["charts"]] == ["day", "week", "month"]
    payload = root.get(
        admin_url("uniqueestimatemetric", "data") + "?name=visitors&period=day"
    ).json()
    assert payload["series"][0]["values"][-1] == visitors.count("day", frozen)
    assert payload["series"][0]["values"][-2] == visitors.count("day", frozen - 86400) == 1
    bad = admin_url("uniqueestimatemetric", "data") + "?name=visitors&period=hour"
    assert root.get(bad).status_code == 404


@pytest.mark.parametrize("model", ["statisticmetric", "gaugemetric", "uniqueestimatemetric"])
def test_list_pages_cost_the_same_for_3_or_30_metrics(
    single: Any, settings: Any, frozen: float, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    client = client_for(make_user("root", staff=True, permitted=False, superuser=True))

    def make(first: int, last: int) -> None:
        for i in range(first, last):
            Statistic(f"s{i:02}").record(i, when=frozen)
            Gauge(f"g{i:02}").set(i, when=frozen)
            UniqueEstimate(f"e{i:02}").add(i, when=frozen)

    make(0, 3)
    url = admin_url(model, "changelist")
    with counting_round_trips(monkeypatch) as sent:
        assert client.get(url).status_code == 200
        few = sent.calls
        make(3, 30)
        sent.reset()
        response = client.get(url)
        many = sent.calls
    assert len(response.context["rows"]) == 30
    assert many == few <= 4


def test_empty_lists_say_so(single: Any, settings: Any) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    client = client_for(make_user("root", staff=True, permitted=False, superuser=True))
    for model, text in (
        ("statisticmetric", b"No statistics hold data"),
        ("gaugemetric", b"No gauges hold data"),
        ("uniqueestimatemetric", b"No unique estimates hold data"),
    ):
        response = client.get(admin_url(model, "changelist"))
        assert response.status_code == 200 and text in response.content


def test_names_are_escaped_on_every_new_page(root: Client, frozen: float) -> None:
    xss = "<script>alert(1)</script>"
    Statistic(f"latency:{xss}").record(5, when=frozen)
    Gauge(xss).set(1, when=frozen)
    UniqueEstimate(xss).add(1, when=frozen)
    quoted = "%3Cscript%3Ealert(1)%3C/script%3E"
    for url in (
        admin_url("viewsmetric", "changelist"),
        admin_url("statisticmetric", "changelist"),
        admin_url("statisticmetric", "chart") + f"?name=latency:{quoted}",
        admin_url("gaugemetric", "changelist"),
        admin_url("gaugemetric", "chart") + f"?name={quoted}",
        admin_url("uniqueestimatemetric", "changelist"),
        admin_url("uniqueestimatemetric", "detail") + f"?name={quoted}",
    ):
        response = root.get(url)
        assert response.status_code == 200, url
        assert xss.encode() not in response.content, url
        assert b"&lt;script&gt;" in response.content, url
