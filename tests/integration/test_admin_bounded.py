"""The admin pages cost a bounded number of Redis round trips, whatever the metrics hold."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from django_redis_metrics import EventSeries, UniqueBitmap
from django_redis_metrics.admin import events as admin_events
from django_redis_metrics.events.keys import OTHER_VALUE

from .conftest import admin_url, client_for, counting_round_trips, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(single: Any, settings: Any, frozen: float) -> Client:
    settings.ROOT_URLCONF = "tests.integration.urls"
    return client_for(make_user("root", staff=True, permitted=False, superuser=True))


def round_trips(monkeypatch: pytest.MonkeyPatch, client: Client, path: str) -> tuple[int, Any]:
    with counting_round_trips(monkeypatch) as sent:
        response = client.get(path)
    assert response.status_code == 200
    return sent.calls, response


def make_series(first: int, last: int, frozen: float) -> None:
    for i in range(first, last):
        EventSeries(f"series{i:03}", index=["kind"]).record(when=frozen - 10, kind="a")


def make_bitmaps(first: int, last: int, frozen: float) -> None:
    for i in range(first, last):
        UniqueBitmap(f"bitmap{i:03}").mark(i, when=frozen)


@pytest.mark.parametrize(
    ("model", "make"), [("eventseriesmetric", make_series), ("uniquebitmapmetric", make_bitmaps)]
)
def test_list_pages_cost_the_same_for_3_or_30_metrics(
    root: Client, monkeypatch: pytest.MonkeyPatch, frozen: float, model: str, make: Any
) -> None:
    make(0, 3, frozen)
    root.get(admin_url(model, "changelist"))
    few, _ = round_trips(monkeypatch, root, admin_url(model, "changelist"))
    make(3, 30, frozen)
    many, response = round_trips(monkeypatch, root, admin_url(model, "changelist"))
    assert len(response.context["rows"]) == 30
    assert many == few <= 4


@pytest.mark.parametrize(
    ("model", "make"), [("eventseriesmetric", make_series), ("uniquebitmapmetric", make_bitmaps)]
)
def test_list_pages_are_paginated_and_searchable(
    root: Client,
    monkeypatch: pytest.MonkeyPatch,
    frozen: float,
    model: str,
    make: Any,
    metrics_settings: Any,
) -> None:
    metrics_settings(ADMIN_PAGE_SIZE=10)
    make(0, 25, frozen)
    first = root.get(admin_url(model, "changelist"))
    assert len(first.context["rows"]) == 10
    assert first.context["count"] == 25
    assert b"page 1 of 3" in first.content
    last = root.get(admin_url(model, "changelist") + "?p=3")
    assert len(last.context["rows"]) == 5
    found = root.get(admin_url(model, "changelist") + "?q=012")
    assert len(found.context["rows"]) == 1


def test_event_series_rows_hold_their_counts(root: Client, frozen: float) -> None:
    orders = EventSeries("orders", index=["country"])
    orders.record(when=frozen - 10, country="FR")
    orders.record(when=frozen - 7200, country="DE")
    orders.record(when=frozen - 2 * 86400, country="DE")
    row = root.get(admin_url("eventseriesmetric", "changelist")).context["rows"][0]
    assert (row["series"].name, row["hour"], row["day"], row["total"]) == ("orders", 1, 2, 3)


def test_bitmap_rows_hold_their_counts(root: Client, frozen: float) -> None:
    visitors = UniqueBitmap("visitors", periods=["day", "month"])
    for user in (1, 2, 3):
        visitors.mark(user, when=frozen)
    row = root.get(admin_url("uniquebitmapmetric", "changelist")).context["rows"][0]
    assert row["counts"] == {"day": 3, "month": 3}


def test_event_page_work_is_bounded_by_values_and_fields(
    root: Client, monkeypatch: pytest.MonkeyPatch, frozen: float
) -> None:
    """A field with thousands of values costs what a field with five does (it was one ZCOUNT
    per value ever seen, in one script call per 500 values)."""
    small = EventSeries("small", index=["file"])
    small.record_many([{"file": f"f{i}", "when": frozen - 10} for i in range(5)])
    big = EventSeries("big", index=["file", "kind"], max_values=5000)
    big.record_many(
        [{"file": f"f{i}", "kind": "k", "when": frozen - 10} for i in range(3000)]
        + [{"file": "f7", "when": frozen - 5}] * 3
    )
    path = admin_url("eventseriesmetric", "detail") + "?name="
    root.get(path + "small")  # the server learns the scripts
    cheap, _ = round_trips(monkeypatch, root, path + "small")
    costly, response = round_trips(monkeypatch, root, path + "big")
    assert costly == cheap
    file_block, kind_block = response.context["by_field"]
    assert file_block["distinct"] == 3000
    assert file_block["partial"] is True
    assert len(file_block["values"]) == admin_events.TOP_VALUES
    assert kind_block["values"] == [("k", 3000)]


def test_event_page_shows_the_overflow_value(root: Client, frozen: float) -> None:
    series = EventSeries("downloads", index=["file"], max_values=2)
    for name in ("a", "b", "c", "d", "a"):
        series.record(when=frozen - 10, file=name)
    response = root.get(admin_url("eventseriesmetric", "detail") + "?name=downloads")
    block = response.context["by_field"][0]
    assert block["values"] == [(OTHER_VALUE, 2), ("a", 2), ("b", 1)]
    assert block["partial"] is False
    assert OTHER_VALUE.encode() in response.content


def test_event_and_bitmap_pages_on_a_single_node_and_on_redis_cluster(
    backend: Any, settings: Any, frozen: float
) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    backend.client.script_flush()  # the page must load its script itself (NOSCRIPT)
    root = client_for(make_user("root", staff=True, permitted=False, superuser=True))
    for name in ("a", "b", "c"):
        EventSeries(name, index=["country", "kind"]).record(
            when=frozen - 10, country="FR", kind=name
        )
        UniqueBitmap(name).mark(1, when=frozen)
    backend.client.script_flush()
    rows = root.get(admin_url("eventseriesmetric", "changelist")).context["rows"]
    assert [(row["series"].name, row["hour"]) for row in rows] == [("a", 1), ("b", 1), ("c", 1)]
    detail = root.get(admin_url("eventseriesmetric", "detail") + "?name=b")
    assert [(block["field"], block["values"]) for block in detail.context["by_field"]] == [
        ("country", [("FR", 1)]),
        ("kind", [("b", 1)]),
    ]
    rows = root.get(admin_url("uniquebitmapmetric", "changelist")).context["rows"]
    assert [row["counts"]["day"] for row in rows] == [1, 1, 1]


@pytest.mark.parametrize(
    "window", ["\u00b2", "3" * 5000, "-60", "60.0", " 60", "\u0663\u0660\u0660"]
)
@pytest.mark.parametrize("page", ["data", "detail"])
def test_a_window_that_is_not_one_of_the_choices_is_a_404(
    root: Client, frozen: float, page: str, window: str
) -> None:
    make_series(0, 1, frozen)
    response = root.get(
        admin_url("eventseriesmetric", page), {"name": "series000", "window": window}
    )
    assert response.status_code == 404
    assert (
        root.get(
            admin_url("eventseriesmetric", page), {"name": "series000", "window": "300"}
        ).status_code
        == 200
    )
