"""Every chart carries the annotations of its range: the admin's pages and data endpoints of
each kind, the dashboard, ``{% metric_chart %}``, and the JSON and CSV exports; read in the
same pipeline as the chart's data; the text escaped in the page, formula-safe in the CSV."""

from __future__ import annotations

import csv
import io
import json
import re
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.template import Context, Template
from django.test import RequestFactory

from django_redis_metrics import (
    Counter,
    EventSeries,
    Gauge,
    Statistic,
    UniqueBitmap,
    UniqueEstimate,
    annotate,
)
from django_redis_metrics.admin import annotating

from ..django_site import admin_url, client_for, counting_round_trips, make_user

pytestmark = pytest.mark.django_db
PARIS = ZoneInfo("Europe/Paris")
HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture
def paris(settings: Any, analyst: Any, frozen: float) -> Any:
    settings.TIME_ZONE = "Europe/Paris"
    return analyst


def drawn(payload: dict[str, Any]) -> list[str]:
    return [note["text"] for note in payload["annotations"]]


def test_a_counter_chart_carries_the_annotations_of_its_range(paris: Any, frozen: float) -> None:
    signups = Counter("signups", precisions=[60, 3600])
    signups.incr(3, when=frozen - 120)
    annotate("Deploy v1.4", when=frozen - 125, tags=["deploy"])
    annotate("Too old for this chart", when=frozen - 3 * 3600)
    page = paris.get(admin_url("countermetric", "chart") + "?name=signups&precision=60")
    [note] = page.context["payload"]["annotations"]
    slice_start = (int(frozen - 125) // 60) * 60
    assert note == {
        "when": pytest.approx(frozen - 125),
        "text": "Deploy v1.4",
        "tags": ["deploy"],
        "label": datetime.fromtimestamp(frozen - 125, PARIS).strftime("%Y-%m-%d %H:%M:%S"),
        "x": slice_start,
    }
    assert "1 annotation: hover a marker" in page.content.decode()
    # The JSON export is the payload; the hour chart's range holds the old one too.
    as_json = paris.get(page.context["export_urls"]["json"]).json()
    assert as_json["annotations"] == page.context["payload"]["annotations"]
    hours = paris.get(admin_url("countermetric", "data") + "?name=signups&precision=3600")
    assert drawn(hours.json()) == ["Too old for this chart", "Deploy v1.4"]


def test_the_csv_export_adds_an_annotations_column_safe_in_a_spreadsheet(
    paris: Any, frozen: float
) -> None:
    Counter("signups", precisions=[60]).incr(1, when=frozen)
    plain = paris.get(admin_url("countermetric", "data") + "?name=signups&precision=60&format=csv")
    assert next(csv.reader(io.StringIO(plain.content.decode()))) == ["start", "label", "value"]
    minute = (int(frozen) // 60) * 60 - 120  # a whole minute, two minutes ago
    annotate("Deploy v1.4", when=minute + 1, tags=["deploy"])
    annotate("Rollback", when=minute + 2)
    annotate('=HYPERLINK("http://evil")', when=minute + 61)
    response = paris.get(
        admin_url("countermetric", "data") + "?name=signups&precision=60&format=csv"
    )
    header, *body = list(csv.reader(io.StringIO(response.content.decode())))
    assert header == ["start", "label", "value", "annotations"]
    noted = {datetime.fromisoformat(row[0]).timestamp(): row[-1] for row in body if row[-1]}
    assert noted == {
        minute: "Deploy v1.4 | Rollback",
        minute + 60: """'=HYPERLINK("http://evil")""",
    }
    assert not any(cell.startswith(("=", "+", "-", "@")) for row in body for cell in row[1:])


def test_annotation_text_is_escaped_in_the_page(paris: Any, frozen: float) -> None:
    Counter("signups", precisions=[60]).incr(1, when=frozen)
    annotate(HOSTILE, when=frozen - 10)
    page = paris.get(admin_url("countermetric", "chart") + "?name=signups&precision=60")
    assert page.context["payload"]["annotations"][0]["text"] == HOSTILE
    html = page.content.decode()
    assert "<img" not in html
    assert "\\u003Cimg src=x onerror=alert(1)\\u003E" in html  # json_script's escaping


def build_each_kind(frozen: float) -> dict[str, str]:
    """A metric of every kind, and the URL of its chart data."""
    EventSeries("orders").record(when=frozen - 5, kind="a")
    Statistic("latency", precisions=[60]).record(5, when=frozen - 5)
    Gauge("queue", precisions=[60]).set(3, when=frozen - 5)
    UniqueBitmap("visitors").mark(1, when=frozen)
    UniqueEstimate("readers").add("x", when=frozen)
    return {
        "events": admin_url("eventseriesmetric", "data") + "?name=orders&window=300",
        "statistic": admin_url("statisticmetric", "data") + "?name=latency&precision=60",
        "gauge": admin_url("gaugemetric", "data") + "?name=queue&precision=60",
        "bitmap": admin_url("uniquebitmapmetric", "data") + "?name=visitors&period=day",
        "estimate": admin_url("uniqueestimatemetric", "data") + "?name=readers&period=day",
    }


def test_every_kind_of_chart_carries_them(paris: Any, frozen: float) -> None:
    urls = build_each_kind(frozen)
    annotate("Deploy v1.4", when=frozen - 60, tags=["deploy"])
    for kind, url in urls.items():
        payload = paris.get(url).json()
        assert drawn(payload) == ["Deploy v1.4"], kind
        [note] = payload["annotations"]
        if payload["period"]:  # drawn on the period holding it: today, the last point
            assert note["x"] == len(payload["x"]) - 1, kind
        else:
            assert payload["x"][0] <= note["x"] <= note["when"] < note["x"] + payload["step"]


def test_the_detail_pages_of_period_charts_carry_them(paris: Any, frozen: float) -> None:
    build_each_kind(frozen)
    annotate("Deploy v1.4", when=frozen - 60)
    for model, name in (("uniquebitmapmetric", "visitors"), ("uniqueestimatemetric", "readers")):
        page = paris.get(admin_url(model, "detail") + f"?name={name}")
        for chart in page.context["charts"]:
            assert drawn(chart["payload"]) == ["Deploy v1.4"], (model, chart["period"])


def test_the_annotations_are_read_in_the_charts_own_round_trips(
    paris: Any, frozen: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    urls = build_each_kind(frozen)
    Counter("signups", precisions=[60]).incr(1, when=frozen)
    urls["counter"] = admin_url("countermetric", "data") + "?name=signups&precision=60"
    before = {}
    for kind, url in urls.items():
        with counting_round_trips(monkeypatch) as trips:
            assert drawn(paris.get(url).json()) == []
        before[kind] = trips.calls
    annotate("Deploy v1.4", when=frozen - 60)
    for kind, url in urls.items():
        with counting_round_trips(monkeypatch) as trips:
            assert drawn(paris.get(url).json()) == ["Deploy v1.4"]
        assert trips.calls == before[kind], kind
    # One pipeline: the counter's data endpoint costs what it cost before annotations (the
    # metric's catalogue entry, then its slices, its series and the annotations together).
    assert before["counter"] == 2


def test_a_chart_draws_the_newest_of_too_many(
    paris: Any, frozen: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(annotating, "MAX_SHOWN", 2)
    Counter("signups", precisions=[60]).incr(1, when=frozen)
    for i in range(3):
        annotate(f"n{i}", when=frozen - 30 + i)
    payload = paris.get(admin_url("countermetric", "data") + "?name=signups&precision=60").json()
    assert drawn(payload) == ["n1", "n2"]
    assert "Only the newest 2 annotations of this range are drawn." in payload["notes"]


def test_the_dashboard_chart_carries_them(paris: Any, frozen: float, settings: Any) -> None:
    settings.TIME_ZONE = "Europe/Paris"
    Counter("hits", labels=("view", "status")).labels(view="home", status="2xx").incr(
        2, when=frozen - 30
    )
    annotate("Deploy v1.4", when=frozen - 90, tags=["deploy"])
    client = client_for(make_user("root", staff=True, permitted=False, superuser=True))
    response = client.get(admin_url("dashboardmetric", "changelist"))
    shown = {tile["tile"].name: tile["context"] for tile in response.context["tiles"]}
    assert drawn(shown["hits"]["payload"]) == ["Deploy v1.4"]


def test_metric_chart_carries_them(paris: Any, frozen: float) -> None:
    Counter("signups", precisions=[60, 3600]).incr(4, when=frozen)
    EventSeries("orders").record(when=frozen - 5, kind="a")
    UniqueBitmap("visitors").mark(3, when=frozen)
    annotate("Deploy v1.4", when=frozen - 90)
    request = RequestFactory().get("/staff/")
    request.user = make_user("staffer", staff=True, permitted=True)
    html = Template(
        "{% load django_redis_metrics %}"
        '{% metric_chart "signups" precision=60 %}{% metric_chart "orders" window=300 %}'
        '{% metric_chart "visitors" period="week" %}'
    ).render(Context({"request": request}))
    found = re.findall(
        r'<script id="drm-embed-\d+-data" type="application/json">(.*?)</script>', html
    )
    assert [drawn(json.loads(text)) for text in found] == [["Deploy v1.4"]] * 3


def test_charts_carry_them_on_both_backends(backend: Any, settings: Any, frozen: float) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    client = client_for(make_user("viewer", staff=True, permitted=True))
    urls = build_each_kind(frozen)
    Counter("signups", precisions=[60]).incr(1, when=frozen)
    urls["counter"] = admin_url("countermetric", "data") + "?name=signups&precision=60"
    annotate("Deploy v1.4", when=frozen - 60, tags=["deploy"])
    for kind, url in urls.items():
        assert drawn(client.get(url).json()) == ["Deploy v1.4"], (backend.name, kind)
