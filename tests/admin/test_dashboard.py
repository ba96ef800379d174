"""The Dashboard: its numbers equal the models', it loads in three round trips however many
metrics there are, its tiles are chosen by ``DASHBOARD``, and it obeys the section's rules."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.test import Client
from django.urls import reverse

from django_redis_metrics import (
    Counter,
    EventSeries,
    Statistic,
    UniqueBitmap,
)
from django_redis_metrics.admin import common as admin_common
from django_redis_metrics.admin.dashboard import resolve_tiles
from django_redis_metrics.admin.tilebase import Tile
from django_redis_metrics.checks import check_settings
from django_redis_metrics.core.periods import Day

from ..django_site import admin_url, client_for, counting_round_trips, make_user

pytestmark = pytest.mark.django_db
PARIS = ZoneInfo("Europe/Paris")
#: The middleware's labelled metrics (HITS_COUNTER, LATENCY_STATISTIC).
HITS = Counter("hits", labels=("view", "status"))
LATENCY = Statistic("latency", labels=("view",))


def dashboard() -> str:
    return admin_url("dashboardmetric", "changelist")


def at(day: datetime, hh: int, mm: int, ss: int = 0) -> float:
    """Epoch seconds of a wall-clock time of ``day`` in Paris."""
    return day.replace(hour=hh, minute=mm, second=ss, tzinfo=PARIS).timestamp()


@pytest.fixture
def clock(settings: Any, single: Any, monkeypatch: pytest.MonkeyPatch) -> float:
    """The site in Paris; the admin's clock held at the latest 14:30:20 in Paris."""
    settings.TIME_ZONE = "Europe/Paris"
    settings.ROOT_URLCONF = "tests.integration.urls"
    now = datetime.now(PARIS)
    day = now if (now.hour, now.minute) >= (14, 31) else now - timedelta(days=1)
    frozen = at(day, 14, 30, 20)
    monkeypatch.setattr(admin_common, "current_time", lambda: frozen)
    return frozen


@pytest.fixture
def root(clock: float) -> Client:
    return client_for(make_user("root", staff=True, permitted=False, superuser=True))


def tiles(response: Any) -> dict[str, dict[str, Any]]:
    assert response.status_code == 200
    return {shown["tile"].name: shown["context"] for shown in response.context["tiles"]}


def test_the_dashboard_is_in_the_admin_index_and_obeys_the_permission(clock: float) -> None:
    analyst = client_for(make_user("analyst", staff=True, permitted=True))
    index = analyst.get(reverse("admin:index")).content.decode()
    assert f'<a href="{dashboard()}">Dashboard</a>' in index
    assert analyst.get(dashboard()).status_code == 200
    assert (
        client_for(make_user("clerk", staff=True, permitted=False)).get(dashboard()).status_code
        == 403
    )
    anonymous = client_for(None).get(dashboard())
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("admin:login"))


def test_hits_today_against_the_same_time_yesterday(root: Client, clock: float) -> None:
    today = datetime.fromtimestamp(clock, PARIS)
    yesterday = today - timedelta(days=1)
    hits = Counter("hits")
    for when, count in [
        (at(today, 0, 0, 1), 2),
        (at(today, 9, 15), 3),
        (at(today, 14, 30, 10), 1),
        (at(today, 14, 29, 40), 4),
        (at(yesterday, 8, 0), 4),
        (at(yesterday, 14, 10), 6),  # the hour holding "this time": counted pro rata
        (at(yesterday, 14, 50), 5),
        (at(yesterday, 16, 0), 7),  # later than this time yesterday
        (at(yesterday, 23, 59), 8),
    ]:
        hits.incr(count, when=when)
    shown = tiles(root.get(dashboard()))["hits"]
    midnight = Day.containing(clock, PARIS).start_ts
    # The model's own answer: today's hour slices, from the site's midnight.
    assert shown["today"] == sum(c for s, c in hits.series(3600) if s >= midnight) == 10
    assert shown["minute"] == sum(c for s, c in hits.series(1) if s > clock - 60) == 5
    share = (at(yesterday, 14, 30, 20) - at(yesterday, 14, 0)) / 3600
    assert shown["yesterday"] == round(4 + (6 + 5) * share) == 10
    assert shown["yesterday_estimated"] is True
    assert shown["change"] == 0
    assert shown["payload"]["caption"] == "hits per minute"
    assert shown["payload"]["series"][0]["values"][-2:] == [4, 1]
    page = root.get(dashboard()).content.decode()
    assert f'href="{shown["today_url"].replace("&", "&amp;")}"' in page
    chart = root.get(shown["today_url"])  # the number's chart: today's hour slices
    assert chart.context["payload"]["total"] == 10
    assert chart.context["payload"]["labels"][0] == datetime.fromtimestamp(
        midnight, PARIS
    ).strftime("%Y-%m-%d %H:%M")


def test_active_users_top_views_and_busiest_series_equal_the_models(
    root: Client, clock: float
) -> None:
    active = UniqueBitmap("active_users")
    for user, days_ago in [(1, 0), (2, 0), (3, 1), (4, 3), (5, 20)]:
        active.mark(user, when=clock - days_ago * 86400)
    for view, count in [("home", 5), ("shop", 9), ("about", 1)]:
        HITS.labels(view=view, status="2xx").incr(count, when=clock - 60)
    HITS.labels(view="shop", status="4xx").incr(2, when=clock - 60)  # every class counts
    HITS.labels(view="old", status="2xx").incr(50, when=clock - 3 * 86400)  # not today
    orders = EventSeries("orders", index=["country"])
    downloads = EventSeries("downloads")
    for minutes in (1, 2, 3, 90):
        orders.record(when=clock - 60 * minutes, country="FR")
    downloads.record(when=clock - 60 * 120, file="a")
    shown = tiles(root.get(dashboard()))
    counts = {kind: count for kind, _, count in shown["active_users"]["counts"]}
    assert counts == {k: active.count(k, when=clock) for k in ("day", "week", "month")}
    assert [(r["view"], r["count"]) for r in shown["top_views"]["rows"]] == [
        ("shop", 11),
        ("home", 5),
        ("about", 1),
    ]
    rows = {r["name"]: (r["hour"], r["today"]) for r in shown["events"]["rows"]}
    midnight = Day.containing(clock, PARIS).start_ts
    for name, series in (("orders", orders), ("downloads", downloads)):
        expected = (series.count(clock - 3600, clock), series.count(midnight, clock))
        assert rows[name] == expected
    assert [r["name"] for r in shown["events"]["rows"]] == ["orders", "downloads"]


def test_the_hits_chart_refreshes_with_the_slices_it_was_drawn_with(
    root: Client, clock: float
) -> None:
    hits = Counter("hits")
    hits.incr(2, when=clock - 30)
    hits.incr(5, when=clock - 90 * 60)  # an hour and a half ago: not in the last hour
    shown = tiles(root.get(dashboard()))["hits"]
    drawn = shown["payload"]
    assert len(drawn["x"]) == 60 and drawn["total"] == 2
    refreshed = root.get(shown["data_url"]).json()  # what the live chart fetches
    assert refreshed["x"] == drawn["x"] and refreshed["total"] == 2
    for bad in ("0", "2001", "\u00b2", "1" * 5000, "-5"):
        page = root.get(shown["data_url"].replace("points=60", f"points={bad}"))
        assert page.status_code == 404


def test_error_rate_from_the_status_series(root: Client, clock: float) -> None:
    for view, status, count in [
        ("home", "2xx", 90),
        ("home", "5xx", 10),
        ("shop", "2xx", 40),
        ("shop", "4xx", 8),
        ("shop", "5xx", 2),
        ("api", "2xx", 50),
    ]:
        HITS.labels(view=view, status=status).incr(count, when=clock - 30)
    HITS.labels(view="home", status="5xx").incr(1, when=clock - 7200)  # not in the last hour
    errors = tiles(root.get(dashboard()))["errors"]
    assert errors["today"] == {"total": 201, "server": 13}
    assert errors["today_rate"] == round(100 * 13 / 201, 1)
    assert errors["hour"] == {"total": 200, "server": 12}
    assert [(r["view"], r["server"], r["client"], r["rate"]) for r in errors["rows"]] == [
        ("home", 11, 0, 10.9),
        ("shop", 2, 8, 4.0),
    ]
    assert errors["rows"][0]["server_url"].startswith(admin_url("countermetric", "chart"))
    server = root.get(errors["rows"][0]["server_url"])  # the series' chart: its metric's, filtered
    assert server.status_code == 200 and server.context["payload"]["total"] == 11
    page = root.get(dashboard()).content.decode()
    assert ">5xx share</th>" in page and "Errors are server errors (5xx)" in page


def make_views(first: int, last: int, clock: float) -> None:
    for i in range(first, last):
        HITS.labels(view=f"view{i:03}", status="2xx").incr(1, when=clock - 10)
        LATENCY.labels(view=f"view{i:03}").record(5 + i, when=clock - 10)
        EventSeries(f"series{i:03}").record(when=clock - 10, kind="x")
        UniqueBitmap(f"bitmap{i:03}").mark(i, when=clock)


def test_the_dashboard_loads_in_three_round_trips_whatever_the_metrics(
    root: Client, clock: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    Counter("hits").incr(1, when=clock)
    UniqueBitmap("active_users").mark(1, when=clock)
    make_views(0, 3, clock)
    root.get(dashboard())
    with counting_round_trips(monkeypatch) as few:
        assert root.get(dashboard()).status_code == 200
    make_views(3, 40, clock)
    with counting_round_trips(monkeypatch) as many:
        response = root.get(dashboard())
    assert len(tiles(response)["top_views"]["rows"]) == 10
    assert len(tiles(response)["events"]["rows"]) == 5
    assert tiles(response)["slowest_views"]["rows"][0]["view"] == "view039"
    print(f"dashboard round trips: {few.calls} with 3 views, {many.calls} with 40")
    assert many.calls == few.calls <= 3


class ConstantTile(Tile):
    """A tile of the site's own, named in DASHBOARD by its dotted path."""

    name = "constant"
    title = "The answer"
    template = "django_redis_metrics/admin/tiles/unavailable.html"

    def queue(self, reads: Any, metrics: Any, env: Any) -> Any:
        ping = reads("exists", "no-such-key")
        return lambda replies: {"answer": 42, "exists": replies[ping]}


def test_tiles_are_chosen_by_the_dashboard_setting(
    root: Client, clock: float, metrics_settings: Any
) -> None:
    for view, count in [("home", 5), ("shop", 9)]:
        HITS.labels(view=view, status="2xx").incr(count, when=clock - 60)
    metrics_settings(DASHBOARD=[f"{__name__}.ConstantTile", {"tile": "top_views", "limit": 1}])
    response = root.get(dashboard())
    assert [shown["tile"].name for shown in response.context["tiles"]] == ["constant", "top_views"]
    shown = tiles(response)
    assert shown["constant"] == {"answer": 42, "exists": 0}
    assert [r["view"] for r in shown["top_views"]["rows"]] == ["shop"]
    assert "The answer" in response.content.decode()


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        ("hits", TypeError, "must be a list of tiles"),
        (["hits", "nope"], ValueError, "Unknown dashboard tile 'nope'"),
        (["os.path.join"], TypeError, "is not a subclass"),
        (["no.such.module.Tile"], ValueError, "Cannot import"),
        ([{"limit": 3}], ValueError, "needs a 'tile'"),
        ([{"tile": "top_views", "limit": 0}], ValueError, "limit must be 1 to 100"),
        ([{"tile": "hits", "colour": "red"}], TypeError, "takes no option colour"),
    ],
)
def test_bad_dashboard_settings_are_clear_errors_and_a_system_check(
    settings: Any, value: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        resolve_tiles(value)
    settings.DJANGO_REDIS_METRICS = {"DASHBOARD": value}
    assert [m.id for m in check_settings()] == ["django_redis_metrics.E051"]


def test_the_latency_tile_reads_the_statistics_summaries(root: Client, clock: float) -> None:
    for view, latencies in {"home": [10, 20, 30, 40], "shop": [100, 200]}.items():
        for value in latencies:
            LATENCY.labels(view=view).record(value, when=clock)
    LATENCY.labels(view="old").record(999, when=clock - 2 * 3600)  # not this hour
    slowest = tiles(root.get(dashboard()))["slowest_views"]
    rows = [(r["view"], r["mean"], r["max"], r["count"]) for r in slowest["rows"]]
    assert rows == [("shop", 150.0, 200.0, 2), ("home", 25.0, 40.0, 4)]
    home = LATENCY.labels(view="home").summary(3600, clock)
    assert (home["mean"], home["count"]) == (25.0, 4)


def test_the_hits_tile_adds_the_series_of_a_labelled_counter(root: Client, clock: float) -> None:
    """A site installed with labels: ``hits`` holds nothing under its own name."""
    for view, status, count in [("home", "2xx", 4), ("home", "5xx", 1), ("shop", "2xx", 2)]:
        HITS.labels(view=view, status=status).incr(count, when=clock - 20)
    shown = tiles(root.get(dashboard()))
    assert shown["hits"]["today"] == 7 == shown["hits"]["minute"] == Counter("hits").total(3600)
    assert shown["hits"]["payload"]["total"] == 7
    chart = root.get(shown["hits"]["today_url"])  # the labelled counter's page
    assert chart.status_code == 200 and chart.context["payload"]["total"] == 7
    top = shown["top_views"]["rows"]
    assert [(r["view"], r["count"]) for r in top] == [("home", 5), ("shop", 2)]
    home = root.get(top[0]["url"])  # its busiest series: home's 2xx answers
    assert home.status_code == 200 and home.context["payload"]["total"] == 4


def test_a_site_that_just_upgraded_sees_before_and_after_added(root: Client, clock: float) -> None:
    """The per-view names the middleware wrote before labels (no longer written: their
    templates are None) add to the labelled series, each request counted once."""
    before, after = clock - 3600, clock - 30
    Counter("hits").incr(6, when=before)  # the site's hits, unlabelled before the upgrade
    Counter("hits:home").incr(6, when=before)
    Counter("status:home:2xx").incr(5, when=before)
    Counter("status:home:5xx").incr(1, when=before)
    Statistic("latency:home").record(10, when=clock)
    HITS.labels(view="home", status="2xx").incr(3, when=after)
    HITS.labels(view="home", status="5xx").incr(1, when=after)
    LATENCY.labels(view="home").record(30, when=clock)
    shown = tiles(root.get(dashboard()))
    assert shown["hits"]["today"] == 10 == Counter("hits").total(3600)
    assert [(r["view"], r["count"]) for r in shown["top_views"]["rows"]] == [("home", 10)]
    assert shown["errors"]["today"] == {"total": 10, "server": 2}
    assert [(r["view"], r["server"]) for r in shown["errors"]["rows"]] == [("home", 2)]
    slowest = shown["slowest_views"]["rows"]
    assert [(r["view"], r["mean"], r["count"]) for r in slowest] == [("home", 20.0, 2)]


def test_names_still_written_before_labels_are_not_counted_twice(
    root: Client, clock: float, metrics_settings: Any
) -> None:
    """A site that keeps writing the old names writes both for every request: the tiles read
    the labelled series alone."""
    metrics_settings(
        VIEW_COUNTER="hits:{view}", VIEW_STATUS="status:{view}:{class}", VIEW_TIMER="latency:{view}"
    )
    for name in ("hits:home", "status:home:2xx"):
        Counter(name).incr(2, when=clock - 30)
    Statistic("latency:home").record(10, when=clock)
    HITS.labels(view="home", status="2xx").incr(2, when=clock - 30)
    LATENCY.labels(view="home").record(10, when=clock)
    shown = tiles(root.get(dashboard()))
    assert [(r["view"], r["count"]) for r in shown["top_views"]["rows"]] == [("home", 2)]
    assert shown["errors"]["today"] == {"total": 2, "server": 0}
    assert [r["count"] for r in shown["slowest_views"]["rows"]] == [1]


def test_the_dashboard_on_a_single_node_and_on_redis_cluster(
    backend: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    now = datetime.now(PARIS).timestamp()
    monkeypatch.setattr(admin_common, "current_time", lambda: now)
    HITS.labels(view="home", status="2xx").incr(2, when=now)
    HITS.labels(view="home", status="5xx").incr(1, when=now)
    UniqueBitmap("active_users").mark(9, when=now)
    EventSeries("orders").record(when=now - 1, kind="a")
    root = client_for(make_user("root", staff=True, permitted=False, superuser=True))
    shown = tiles(root.get(dashboard()))
    assert shown["hits"]["minute"] == 3
    assert [(r["view"], r["count"]) for r in shown["top_views"]["rows"]] == [("home", 3)]
    assert shown["errors"]["today"]["server"] == 1
    assert shown["active_users"]["counts"][0][2] == 1
    assert shown["events"]["rows"][0]["hour"] == 1
