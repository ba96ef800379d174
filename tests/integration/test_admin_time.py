"""One time zone everywhere: the site's. A site in Europe/Paris, a test process (and browser)
in UTC: every label the admin makes follows the site, and calendar periods are named as such."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from django_redis_metrics import Counter, UniqueBitmap
from django_redis_metrics.admin import charts, labels
from django_redis_metrics.core.periods import Day, Hour, Month, Week

from .conftest import admin_url

PARIS = ZoneInfo("Europe/Paris")


def ts(text: str) -> float:
    """Epoch seconds of an ISO 8601 instant with its offset."""
    return datetime.fromisoformat(text).timestamp()


@pytest.fixture
def paris(settings: Any) -> Any:
    settings.TIME_ZONE = "Europe/Paris"
    return settings


def test_instants_are_labelled_in_the_site_zone_not_in_utc(paris: Any) -> None:
    moment = ts("2026-11-22T23:30:00+00:00")  # 00:30 on the 23rd in Paris
    assert labels.instant_label(moment, 60) == "2026-11-23 00:30"
    assert labels.instant_label(moment + 5, 1) == "2026-11-23 00:30:05"
    assert labels.iso_instant(moment) == "2026-11-23T00:30:00+01:00"
    assert labels.zone_label(moment) == "Europe/Paris (UTC+01:00)"
    assert labels.zone_label(ts("2026-07-01T12:00:00+00:00")) == "Europe/Paris (UTC+02:00)"


def test_a_live_chart_says_the_offset_of_now_a_fixed_range_that_of_its_end(
    settings: Any,
) -> None:
    """A month that began in daylight saving time and is current after it ended: its chart
    says today's offset, the one the page heading says."""
    settings.TIME_ZONE = "America/New_York"
    november = ts("2026-11-01T00:00:00-04:00")  # EDT; EST from Nov 1, 02:00
    now = ts("2026-11-25T12:00:00-05:00")

    def chart(partial: bool) -> charts.Chart:
        series = [charts.Series("users", [3])]
        return charts.Chart("u", "bitmap", "u", [int(november)], ["Nov 2026"], series, None,
                            period="month", partial=partial)  # fmt: skip

    assert chart(partial=True).payload(now)["tz_label"] == "America/New_York (UTC-05:00)"
    assert labels.zone_label(now) == "America/New_York (UTC-05:00)"  # the heading's
    assert chart(partial=False).payload(now)["tz_label"] == "America/New_York (UTC-04:00)"


def test_the_apps_own_time_zone_wins_over_djangos(paris: Any, metrics_settings: Any) -> None:
    metrics_settings(TIME_ZONE="Asia/Tokyo")
    moment = ts("2026-11-22T23:30:00+00:00")
    assert labels.instant_label(moment, 60) == "2026-11-23 08:30"
    assert labels.zone_label(moment) == "Asia/Tokyo (UTC+09:00)"


def test_calendar_periods_are_labelled_as_periods(paris: Any) -> None:
    moment = ts("2026-11-22T23:30:00+00:00")  # a Monday in Paris, still Sunday in UTC
    assert labels.period_label(Day.containing(moment)) == "2026-11-23"
    assert labels.period_label(Week.containing(moment)) == "2026-W48"
    assert labels.period_label(Hour.containing(moment)) == "2026-11-23 00:00"
    # November's first instant in Paris is still October 31 in UTC.
    first = ts("2026-10-31T23:30:00+00:00")
    assert labels.period_label(Month.containing(first)) == "Nov 2026"


def test_whole_day_slices_are_labelled_as_utc_days(paris: Any) -> None:
    """Counter slices are epoch-aligned: a 1-day slice runs from midnight UTC (01:00 in
    Paris), so it is labelled as the UTC day it is and its chart is drawn in UTC."""
    midnight_utc = ts("2026-11-23T00:00:00+00:00")
    assert labels.instant_label(midnight_utc, 86400) == "2026-11-23 UTC"
    assert labels.chart_zone(86400) is UTC
    assert labels.chart_zone(3600) == PARIS
    assert labels.rate(86400) == "per day (UTC)"
    assert labels.rate(3600) == "per hour"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(1, "per second"), (5, "per 5 seconds"), (60, "per minute"), (300, "per 5 minutes"),
     (3600, "per hour"), (18000, "per 5 hours"), (172800, "per 2 days (UTC)"),
     (90, "per 90 seconds")],
)  # fmt: skip
def test_rates_are_said_as_people_say_them(seconds: int, text: str) -> None:
    assert labels.rate(seconds) == text


@pytest.mark.django_db
def test_counter_chart_data_names_its_metric_and_the_site_zone(
    paris: Any, analyst: Any, frozen: float
) -> None:
    Counter("signups", precisions=[60, 86400]).incr(3, when=frozen)
    data = analyst.get(admin_url("countermetric", "data") + "?name=signups&precision=60").json()
    assert data["caption"] == "signups per minute"
    assert data["tz"] == "Europe/Paris"
    last = data["x"][-1]
    assert last == int(frozen) // 60 * 60
    expected = datetime.fromtimestamp(last, PARIS).strftime("%Y-%m-%d %H:%M")
    assert data["labels"][-1] == expected  # not the UTC wall time of the process
    assert data["tz_label"].startswith("Europe/Paris (UTC+0")
    assert data["partial"] is True and data["series"][0]["values"][-1] == 3
    daily = analyst.get(admin_url("countermetric", "data") + "?name=signups&precision=86400")
    assert daily.json()["tz"] == "UTC"
    assert daily.json()["labels"][-1].endswith(" UTC")
    assert daily.json()["caption"] == "signups per day (UTC)"


@pytest.mark.django_db
def test_bitmap_points_are_the_sites_days(paris: Any, analyst: Any, frozen: float) -> None:
    visitors = UniqueBitmap("visitors", periods=["day", "week", "month"])
    visitors.mark(7, when=frozen)
    page = analyst.get(admin_url("uniquebitmapmetric", "detail") + "?name=visitors")
    assert page.status_code == 200
    shown = {chart["period"]: chart["payload"] for chart in page.context["charts"]}
    today = datetime.fromtimestamp(frozen, PARIS)
    assert shown["day"]["labels"][-1] == today.strftime("%Y-%m-%d")
    assert shown["week"]["labels"][-1] == "{}-W{:02d}".format(*today.isocalendar()[:2])
    assert shown["month"]["labels"][-1] == today.strftime("%b %Y")
    assert shown["day"]["series"][0]["values"][-1] == 1
    assert shown["day"]["x"][-1] == Day.containing(frozen, PARIS).start_ts
    assert b"Europe/Paris" in page.content
