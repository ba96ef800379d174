"""The charts' data: export (CSV and JSON), the previous period overlaid, any range within
retention, captions naming their metric, and cohort tables from the first period with users."""

from __future__ import annotations

import csv
import io
from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from django_redis_metrics import Counter, EventSeries, UniqueBitmap
from django_redis_metrics.core.periods import Week

from ..clock import moment
from ..django_site import admin_url

pytestmark = pytest.mark.django_db
PARIS = ZoneInfo("Europe/Paris")


@pytest.fixture
def paris(settings: Any, analyst: Any) -> Any:
    settings.TIME_ZONE = "Europe/Paris"
    return analyst


def rows(response: Any) -> list[list[str]]:
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.content.decode())))


def local_input(when: float) -> str:
    """What ``<input type="datetime-local">`` sends for ``when`` in Paris."""
    return datetime.fromtimestamp(when, PARIS).strftime("%Y-%m-%dT%H:%M")


def test_the_csv_export_equals_the_counters_series(paris: Any, frozen: float) -> None:
    signups = Counter("signups", precisions=[60, 3600])
    for minutes_ago, count in ((0, 2), (3, 5), (119, 1), (200, 9)):
        signups.incr(count, when=frozen - 60 * minutes_ago)
    page = paris.get(admin_url("countermetric", "chart") + "?name=signups&precision=60")
    csv_url = page.context["export_urls"]["csv"]
    assert csv_url.encode().replace(b"&", b"&amp;") in page.content
    response = paris.get(csv_url)
    assert response["Content-Disposition"] == 'attachment; filename="signups-60s.csv"'
    header, *body = rows(response)
    assert header == ["start", "label", "value"]
    expected = signups.recent(60, 120, until=frozen)  # the zero-filled series
    assert [int(row[-1]) for row in body] == [count for _, count in expected]
    assert [datetime.fromisoformat(row[0]).timestamp() for row in body] == [
        start for start, _ in expected
    ]
    stored = {start: count for start, count in signups.series(60)}
    assert {datetime.fromisoformat(r[0]).timestamp(): int(r[-1]) for r in body if int(r[-1])} == {
        start: count for start, count in stored.items() if start >= expected[0][0]
    }
    first = datetime.fromisoformat(body[0][0])
    assert first.utcoffset() == datetime.fromtimestamp(frozen, PARIS).utcoffset()  # site offset
    assert body[-1][1] == datetime.fromtimestamp(expected[-1][0], PARIS).strftime("%Y-%m-%d %H:%M")
    as_json = paris.get(page.context["export_urls"]["json"]).json()
    assert as_json["series"][0]["values"] == [count for _, count in expected]
    assert paris.get(csv_url.replace("format=csv", "format=xml")).status_code == 404


def test_event_and_bitmap_charts_export_too(paris: Any, frozen: float) -> None:
    orders = EventSeries("orders", index=["country"])
    orders.record(when=frozen - 10, country="FR")
    orders.record(when=frozen - 400, country="DE")
    page = paris.get(admin_url("eventseriesmetric", "detail") + "?name=orders&window=300")
    assert page.context["payload"]["caption"] == "orders per 5 minutes"
    header, *body = rows(paris.get(page.context["export_urls"]["csv"]))
    assert header == ["start", "label", "value"] and len(body) == 60
    assert sum(int(row[-1]) for row in body) == 2
    visitors = UniqueBitmap("visitors")
    visitors.mark(1, when=frozen)
    visitors.mark(2, when=frozen)
    detail = paris.get(admin_url("uniquebitmapmetric", "detail") + "?name=visitors")
    week = next(c for c in detail.context["charts"] if c["period"] == "week")
    header, *body = rows(paris.get(week["export_urls"]["csv"]))
    assert body[-1][1] == str(Week.containing(frozen, PARIS)) and body[-1][-1] == "2"
    assert datetime.fromisoformat(body[-1][0]).timestamp() == Week.containing(frozen).start_ts


def test_counter_chart_overlays_the_day_before_within_retention(paris: Any, frozen: float) -> None:
    hits = Counter("hits", precisions=[60, 3600])  # 120 hours of hour slices: no week before
    hits.incr(3, when=frozen)
    hits.incr(5, when=frozen - 86400)
    url = admin_url("countermetric", "data") + "?name=hits&precision=3600"
    data = paris.get(url + "&compare=day").json()
    assert [s["label"] for s in data["series"]] == ["hits", "the day before"]
    assert data["series"][1]["compare"] is True
    assert data["series"][0]["values"][-1] == 3 and data["series"][1]["values"][-1] == 5
    previous = data["series"][1]["values"]
    assert previous[:24] == [None] * 24 and previous[24] == 0  # older than the kept 120 hours
    assert any("partly beyond" in note for note in data["notes"])
    week = paris.get(url + "&compare=week").json()
    assert len(week["series"]) == 1  # nothing of the week before is kept at this precision
    assert "the week before is beyond" in week["notes"][0]
    header, *body = rows(paris.get(url + "&compare=day&format=csv"))
    assert header == ["start", "label", "the day before", "value"]
    assert body[-1][-2:] == ["5", "3"]
    assert paris.get(url + "&compare=year").status_code == 404


def test_event_chart_overlays_last_week(paris: Any, frozen: float) -> None:
    orders = EventSeries("orders")
    at = max(frozen - 5, frozen // 3600 * 3600)  # in frozen's hour, even in its first seconds
    orders.record(when=at, kind="a")
    for _ in range(4):
        orders.record(when=at - 7 * 86400, kind="a")
    data = paris.get(
        admin_url("eventseriesmetric", "data") + "?name=orders&window=3600&compare=week"
    ).json()
    assert data["series"][0]["values"][-1] == 1
    assert data["series"][1]["label"] == "the week before"
    assert sum(v or 0 for v in data["series"][1]["values"]) == 4


def test_any_range_within_retention(paris: Any, frozen: float) -> None:
    hits = Counter("hits", precisions=[60])
    hits.incr(1, when=frozen - 30 * 60)
    hits.incr(4, when=frozen - 20 * 60)
    hits.incr(9, when=frozen)  # outside the range
    start, end = local_input(frozen - 40 * 60), local_input(frozen - 10 * 60)
    url = admin_url("countermetric", "data") + f"?name=hits&precision=60&start={start}&end={end}"
    data = paris.get(url).json()
    assert data["labels"][0] == start.replace("T", " ")
    assert data["labels"][-1] == end.replace("T", " ")
    assert len(data["x"]) == 31 and data["total"] == 5
    assert data["partial"] is False and data["refresh"] is None  # a past range: not live
    # From before what is kept: the chart starts at the oldest kept slice, and says so.
    old = paris.get(
        admin_url("countermetric", "data")
        + f"?name=hits&precision=60&start={local_input(frozen - 86400)}"
    ).json()
    assert len(old["x"]) == 120 and old["total"] == 14
    assert "no longer kept" in old["notes"][0]
    bad = admin_url("countermetric", "data") + "?name=hits&precision=60&start=yesterday"
    assert paris.get(bad).status_code == 404
    page = paris.get(admin_url("countermetric", "chart") + f"?name=hits&precision=60&start={start}")
    assert page.context["range_form"]["start"] == start
    assert f"start={start.replace(':', '%3A')}".encode() in page.content  # links keep the range


def test_cohort_table_starts_at_the_first_period_with_users(paris: Any, frozen: float) -> None:
    active = UniqueBitmap("active")
    this_week = Week.containing(frozen, PARIS)
    last_week = this_week.prev
    for user in (1, 2, 3, 4):
        active.mark(user, when=moment(last_week, 3600, now=frozen))
    active.mark(1, when=frozen)
    page = paris.get(admin_url("uniquebitmapmetric", "detail") + "?name=active&cohort=week")
    cohort = page.context["cohort"]
    assert [row["period"] for row in cohort] == [str(last_week), str(this_week)]
    assert cohort[0]["size"] == 4 and cohort[0]["cells"][0] == (1, 25)
    # A column per period after the first, a cell per column in every row (even stripes):
    # no column of the 7 a full table has stays empty.
    assert page.context["cohort_offsets"] == [1]
    assert [len(row["cells"]) for row in cohort] == [1, 1]
    assert cohort[1]["cells"] == [(None, None)]  # next week's share: still to come
    html = page.content.decode()
    table = html[html.index('<table class="drm-table drm-cohort"') :]
    table = table[: table.index("</table>")]
    assert table.count("<tr>") == 3 and table.count(">+") == 1
    assert table.count('<td class="drm-later"></td>') == 1


def test_chart_pages_have_controls_and_their_zone(paris: Any, frozen: float) -> None:
    Counter("signups", precisions=[60]).incr(1, when=frozen)
    page = paris.get(admin_url("countermetric", "chart") + "?name=signups&precision=60")
    content = page.content.decode()
    assert "signups per minute" in content and "hits per" not in content
    assert "Europe/Paris (UTC+0" in content
    # ISO 8601 inputs, not the browser's locale order (mm/dd/yyyy) of datetime-local.
    assert 'type="datetime-local"' not in content
    assert f'name="start" value="" placeholder="{page.context["range_form"]["min"]}"' in content
    assert "the day before" in content and "the week before" in content
    assert page.context["range_form"]["max"] == local_input(frozen)
    expected_min = local_input((int(frozen) // 60 - 119) * 60)
    assert page.context["range_form"]["min"] == expected_min
    assert (datetime.fromisoformat(expected_min) + timedelta(minutes=119)).strftime(
        "%Y-%m-%dT%H:%M"
    ) == local_input(frozen)
