"""Long ranges on the chart pages (``?history=year|5y|all``): Redis' days and the archive's
drawn as one line, by week past 2,000 days, exported whole; bad ranges are a 404."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from django_redis_metrics import (
    Counter,
    EventSeries,
    Gauge,
    Statistic,
    UniqueBitmap,
    UniqueEstimate,
)
from django_redis_metrics.core.periods import Day, Month
from django_redis_metrics.core.timeutil import slice_start
from django_redis_metrics.models import ArchivedPeriod, ArchivedSlice

from ..archive_databases import ARCHIVE_DATABASES
from ..django_site import admin_url

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES)
DAY = 86400


@pytest.fixture
def archived(metrics_settings: Callable[..., None], archive_db: str) -> Callable[..., None]:
    """Archive rows of a past the suite's Redis never held, in the test's database."""
    metrics_settings(ARCHIVE_DATABASE=archive_db)

    def write(kind: str, name: str, start: int, **values: Any) -> None:
        ArchivedSlice.objects.using(archive_db).create(
            kind=kind, series=name, metric=name, precision=DAY, start=start, **values
        )

    return write


def chart_of(client: Any, model: str, query: str) -> dict[str, Any]:
    response = client.get(admin_url(model, "chart") + query)
    assert response.status_code == 200, response.content[:300]
    payload: dict[str, Any] = response.context["payload"]
    return payload


def test_a_year_of_a_counter_joins_the_archive_and_redis(
    analyst: Any, frozen: float, archived: Callable[..., None]
) -> None:
    today = slice_start(frozen, DAY)
    archived("counter", "signups", today - 300 * DAY, count=7)  # Redis keeps 120 days
    archived("counter", "signups", today - 400 * DAY, count=99)  # beyond a year: not drawn
    signups = Counter("signups")
    signups.incr(3, when=frozen)
    signups.incr(2, when=today - 10 * DAY + 5)
    payload = chart_of(analyst, "countermetric", "?name=signups&history=year")
    days = dict(zip(payload["x"], payload["series"][0]["values"], strict=True))
    assert len(days) == 366 and payload["step"] == DAY and payload["x"][-1] == today
    assert {start: n for start, n in days.items() if n} == {
        today - 300 * DAY: 7,
        today - 10 * DAY: 2,
        today: 3,
    }
    assert payload["partial"] and payload["refresh"] is None
    page = analyst.get(admin_url("countermetric", "chart") + "?name=signups&history=year")
    assert b'aria-current="page">a year</a>' in page.content
    assert "history=year" in page.context["export_urls"]["csv"]
    rows = list(
        csv.reader(io.StringIO(analyst.get(page.context["export_urls"]["csv"]).content.decode()))
    )
    body = rows[1:]
    assert len(body) == 366 and sum(int(row[-1]) for row in body) == 12
    assert datetime.fromisoformat(body[0][0]).timestamp() == today - 365 * DAY


def test_all_of_a_long_history_is_drawn_by_week(
    analyst: Any, frozen: float, archived: Callable[..., None]
) -> None:
    today = slice_start(frozen, DAY)
    archived("counter", "orders", today - 3000 * DAY, count=5)
    archived("counter", "orders", today - 2999 * DAY, count=6)
    Counter("orders").incr(4, when=frozen)
    payload = chart_of(analyst, "countermetric", "?name=orders&history=all")
    assert payload["step"] == 7 * DAY and len(payload["x"]) <= 2000
    assert payload["x"][0] <= today - 3000 * DAY < payload["x"][0] + 7 * DAY
    assert sum(payload["series"][0]["values"]) == 15
    assert payload["series"][0]["values"][-1] >= 4


def test_all_starts_on_the_day_of_an_archive_whose_oldest_row_is_an_hour(
    analyst: Any, frozen: float, archived: Callable[..., None], archive_db: str
) -> None:
    """An import of hours (a django-redis-metrics 2.2 keyspace keeps hours longer than days)
    can make the oldest row an hour: the chart's days still start at midnight."""
    today = slice_start(frozen, DAY)
    ArchivedSlice.objects.using(archive_db).create(
        kind="counter",
        series="imported",
        metric="imported",
        precision=3600,
        start=today - 50 * DAY + 13 * 3600,
        count=8,
    )
    archived("counter", "imported", today - 49 * DAY, count=5)
    Counter("imported").incr(1, when=frozen)
    payload = chart_of(analyst, "countermetric", "?name=imported&history=all")
    assert payload["step"] == DAY and payload["x"][0] == today - 50 * DAY
    assert all(x % DAY == 0 for x in payload["x"])
    assert payload["series"][0]["values"][1] == 5


def test_all_of_an_archive_from_1970_on_shows_its_newest_2000_weeks(
    analyst: Any, frozen: float, archived: Callable[..., None]
) -> None:
    today = slice_start(frozen, DAY)
    archived("counter", "legacy", 0, count=5)  # the first day of 1970: start 0 is a row too
    archived("counter", "legacy", today - 3000 * DAY, count=6)
    Counter("legacy").incr(4, when=frozen)
    payload = chart_of(analyst, "countermetric", "?name=legacy&history=all")
    assert payload["step"] == 7 * DAY and len(payload["x"]) == 2000
    assert payload["x"][-1] == today // (7 * DAY) * (7 * DAY)
    assert any("newest 2,000" in note for note in payload["notes"])
    assert sum(payload["series"][0]["values"]) == 10  # 1970 lies beyond the 2,000 weeks
    archived("gauge", "old_queue", 0, count=1, last=2.0, minimum=1.0, maximum=9.0)
    Gauge("old_queue").set(3, when=frozen)
    payload = chart_of(analyst, "gaugemetric", "?name=old_queue&history=all")
    assert len(payload["x"]) == 2000 and payload["x"][-1] == today
    assert any("newest 2,000" in note for note in payload["notes"])


def test_a_statistic_and_a_gauge_show_each_day(
    analyst: Any, frozen: float, archived: Callable[..., None]
) -> None:
    today = slice_start(frozen, DAY)
    latency = Statistic("render_ms")
    latency.record_many([10.0, 20.0, 30.0], when=today - 3 * DAY + 60)
    payload = chart_of(analyst, "statisticmetric", "?name=render_ms&history=5y")
    assert len(payload["x"]) == 5 * 365 + 2 and payload["x"][-1] == today
    means = dict(zip(payload["x"], payload["series"][0]["values"], strict=True))
    assert means[today - 3 * DAY] == pytest.approx(20.0)
    assert means[today - 2 * DAY] is None  # an empty day is a gap, not 0
    queue = Gauge("queue")
    queue.set(8, when=today - DAY + 60)
    queue.set(5, when=today - DAY + 120)
    archived("gauge", "queue", today - 700 * DAY, count=1, last=2.0, minimum=1.0, maximum=9.0)
    payload = chart_of(analyst, "gaugemetric", "?name=queue&history=5y")
    series = {
        s["label"]: dict(zip(payload["x"], s["values"], strict=True)) for s in payload["series"]
    }
    last, low, high = (series[label] for label in list(series)[:3])
    assert (last[today - DAY], low[today - DAY], high[today - DAY]) == (5.0, 5.0, 8.0)
    assert (last[today - 700 * DAY], low[today - 700 * DAY], high[today - 700 * DAY]) == (
        2.0,
        1.0,
        9.0,
    )


def test_bad_or_impossible_ranges_are_a_404(
    analyst: Any, frozen: float, archived: Callable[..., None]
) -> None:
    Counter("signups").incr(1, when=frozen)
    Counter("fine", precisions=[60, 3600]).incr(1, when=frozen)
    assert (
        analyst.get(
            admin_url("countermetric", "chart") + "?name=signups&history=decade"
        ).status_code
        == 404
    )
    response = analyst.get(admin_url("countermetric", "chart") + "?name=fine&history=year")
    assert response.status_code == 404


def test_sets_and_events_draw_their_periods_and_days(
    analyst: Any, frozen: float, archived: Callable[..., None], archive_db: str
) -> None:
    today = slice_start(frozen, DAY)
    visitors = UniqueBitmap("visitors")
    for user in (1, 2, 3):
        visitors.mark(user, when=frozen)
    long_ago = Month.containing(frozen).shift(-64)  # Redis keeps 60 months: archived
    ArchivedPeriod.objects.using(archive_db).create(
        kind="bitmap",
        series="visitors",
        metric="visitors",
        period="month",
        start=int(long_ago.start_ts),
        count=41,
    )
    page = analyst.get(admin_url("uniquebitmapmetric", "detail") + "?name=visitors&history=all")
    assert page.status_code == 200
    charts = {shown["period"]: shown["payload"] for shown in page.context["charts"]}
    assert set(charts) == {"day", "week", "month"}
    months = dict(zip(charts["month"]["x"], charts["month"]["series"][0]["values"], strict=True))
    assert months[int(long_ago.start_ts)] == 41
    assert months[int(Month.containing(frozen).start_ts)] == 3
    assert charts["day"]["x"][0] <= long_ago.start_ts < charts["day"]["x"][1]
    assert "history=all" in page.context["charts"][0]["export_urls"]["csv"]
    items = UniqueEstimate("searches")
    items.add("a", when=frozen)
    page = analyst.get(admin_url("uniqueestimatemetric", "detail") + "?name=searches&history=year")
    assert page.status_code == 200
    days = page.context["charts"][0]["payload"]
    assert days["series"][0]["values"][-1] == 1 and len(days["x"]) == 366
    orders = EventSeries("orders")
    orders.record(when=frozen, item="book")
    orders.record(when=today - 3 * DAY + 60, item="pen")
    page = analyst.get(admin_url("eventseriesmetric", "detail") + "?name=orders&history=year")
    assert page.status_code == 200
    payload = page.context["payload"]
    counts = dict(zip(payload["x"], payload["series"][0]["values"], strict=True))
    days = {Day.containing(today - 3 * DAY + 60).start_ts: 1, Day.containing(frozen).start_ts: 1}
    assert {start: n for start, n in counts.items() if n} == days  # the site's days
