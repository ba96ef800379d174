"""The admin's Funnels entry (a page per funnel declared in ``metrics.py``: conversion per step
in a chosen period, and per day as a chart) and the cohort table's second bitmap."""

from __future__ import annotations

import csv
import io
import types
from collections.abc import Iterator
from typing import Any

import pytest

from django_redis_metrics import EventSeries, Funnel, UniqueBitmap
from django_redis_metrics.core.periods import Day, Week
from django_redis_metrics.funnels import declared

from ..clock import moment
from ..django_site import admin_url, client_for, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def funnels(analyst: Any, frozen: float) -> Iterator[dict[str, Any]]:
    """A bitmap funnel and an ordered one, declared as a ``metrics.py`` binds them."""
    today = Day.containing(frozen)
    visited, carted, bought = (UniqueBitmap(n) for n in ("visited", "carted", "bought"))
    for user in range(8):
        visited.mark(user, frozen)
    for user in (1, 2, 3, 4):
        carted.mark(user, frozen)
    bought.mark(2, frozen)
    yesterday = moment(today.shift(-1), 3600, now=frozen)
    for user in (1, 2):
        visited.mark(user, yesterday)
    carted.mark(1, yesterday)
    orders = EventSeries("orders", index=["type"])
    first = max(today.start_ts, frozen - 100)  # today's, even in the minutes after midnight
    for user, kinds in ((1, ("view", "cart", "buy")), (2, ("view", "cart")), (3, ("view",))):
        for i, kind in enumerate(kinds):
            orders.record(when=first + (frozen - first) * i / 3, type=kind, user=user)
    module = types.ModuleType("shop.metrics")
    module.checkout = Funnel(steps=[visited, carted, bought])  # type: ignore[attr-defined]
    module.ordered = Funnel.ordered(  # type: ignore[attr-defined]
        orders, steps=[{"type": "view"}, {"type": "cart"}, {"type": "buy"}], within=3600
    )
    declared.forget()
    declared.collect(module)
    yield {"client": analyst, "now": frozen, "today": today}
    declared.forget()


def page(client: Any, suffix: str, query: str = "") -> Any:
    return client.get(admin_url("funnelmetric", suffix) + query)


def test_the_list_names_every_declared_funnel(funnels: dict[str, Any]) -> None:
    response = page(funnels["client"], "changelist")
    assert response.status_code == 200
    assert [row["name"] for row in response.context["rows"]] == ["checkout", "ordered"]
    assert "visited → carted → bought" in response.content.decode()


def test_a_bitmap_funnel_page_shows_conversion_per_step(funnels: dict[str, Any]) -> None:
    response = page(funnels["client"], "detail", "?name=checkout")
    assert response.status_code == 200
    rows = response.context["rows"]
    assert [(r["step"], r["users"]) for r in rows] == [("visited", 8), ("carted", 4), ("bought", 1)]
    assert [r["of_first"] for r in rows] == [100.0, 50.0, 12.5]
    assert [r["of_previous"] for r in rows] == [100.0, 50.0, 25.0]
    payload = response.context["payload"]
    assert payload["kind"] == "funnel" and len(payload["x"]) == 2  # from the first day with users
    assert [s["label"] for s in payload["series"]] == [
        "carted (% of visited)",
        "bought (% of visited)",
    ]
    assert payload["series"][0]["values"][-2:] == [50.0, 50.0]  # yesterday 1 of 2, today 4 of 8
    assert payload["series"][1]["values"][-2:] == [0.0, 12.5]
    html = response.content.decode()
    assert 'id="funnel-over-time"' in html and "12.5%" in html


def test_a_chosen_period_and_day(funnels: dict[str, Any]) -> None:
    yesterday = funnels["today"].shift(-1).start.date().isoformat()
    response = page(funnels["client"], "detail", f"?name=checkout&period=day&date={yesterday}")
    assert [r["users"] for r in response.context["rows"]] == [2, 1, 0]
    response = page(funnels["client"], "detail", "?name=checkout&period=week&days=7")
    assert response.context["period"] == Week.containing(funnels["now"])
    assert [r["users"] for r in response.context["rows"]] == [8, 4, 1]  # yesterday's within
    assert len(response.context["payload"]["x"]) == 2  # 7 days asked, from the first with users


def test_an_ordered_funnel_page(funnels: dict[str, Any]) -> None:
    response = page(funnels["client"], "detail", "?name=ordered")
    assert [r["users"] for r in response.context["rows"]] == [3, 2, 1]
    assert response.context["rows"][2]["of_previous"] == 50.0
    assert response.context["payload"]["series"][1]["values"][-1] == round(100 / 3, 1)


def test_the_chart_exports(funnels: dict[str, Any]) -> None:
    data = page(funnels["client"], "data", "?name=checkout&days=2").json()
    assert data["series"][0]["values"] == [50.0, 50.0]
    text = page(funnels["client"], "data", "?name=checkout&days=2&format=csv")
    rows = list(csv.reader(io.StringIO(text.content.decode())))
    assert len(rows) == 3 and "bought (% of visited)" in rows[0]  # the first series: "value"
    assert [row[-1] for row in rows[1:]] == ["50.0", "50.0"]


@pytest.mark.parametrize(
    "query",
    [
        "?name=nope",
        "?name=checkout&period=year",
        "?name=checkout&period=day&date=yesterday",
        "?name=checkout&days=0",
        "?name=checkout&days=91",
        "?name=checkout&period=day&date=2999-01-01",
        "?name=checkout&period=day&date=2000-01-01",  # visited keeps no such old day: empty
    ],
)
def test_bad_queries_are_404(funnels: dict[str, Any], query: str) -> None:
    response = page(funnels["client"], "detail", query)
    if query.endswith("2000-01-01"):
        assert response.status_code == 200
        assert [r["users"] for r in response.context["rows"]] == [0, 0, 0]
    else:
        assert response.status_code == 404


@pytest.mark.parametrize(
    ("suffix", "query"),
    [("changelist", ""), ("detail", "?name=checkout"), ("data", "?name=checkout")],
)
def test_only_staff_with_the_permission_see_funnels(
    funnels: dict[str, Any], suffix: str, query: str
) -> None:
    url = admin_url("funnelmetric", suffix) + query
    for user in (None, make_user("visitor", staff=False, permitted=True)):
        response = client_for(user).get(url)
        assert response.status_code == 302 and "/login/" in response["Location"]
    clerk = client_for(make_user("clerk", staff=True, permitted=False))
    response = clerk.get(url)
    assert response.status_code == 403 and b"visited" not in response.content
    assert funnels["client"].get(url).status_code == 200


def test_without_redis_a_funnel_page_answers_503(funnels: dict[str, Any], settings: Any) -> None:
    from django_redis_metrics.testing import free_port

    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "CONNECTION": f"redis://127.0.0.1:{free_port()}/0",
    }
    assert page(funnels["client"], "changelist").status_code == 200  # reads nothing from Redis
    assert page(funnels["client"], "detail", "?name=checkout").status_code == 503
    assert page(funnels["client"], "data", "?name=checkout").status_code == 503


def test_a_funnel_that_cannot_answer_says_why(
    funnels: dict[str, Any], metrics_settings: Any
) -> None:
    weekly = UniqueBitmap("weekly", periods=("week",))
    declared.declare(Funnel([weekly]), "weekly")
    response = page(funnels["client"], "detail", "?name=weekly&period=week")
    assert response.status_code == 200
    assert response.context["rows"] == [{"step": "weekly", "users": 0, "of_first": None,
                                         "of_previous": None}]  # fmt: skip
    assert "keeps no day keys" in response.context["errors"]["chart"]
    metrics_settings(FUNNEL_MAX_EVENTS=2)  # the ordered funnel's 6 events are too many
    response = page(funnels["client"], "detail", "?name=ordered")
    assert response.status_code == 200
    assert "FUNNEL_MAX_EVENTS = 2" in response.content.decode()
    assert set(response.context["errors"]) == {"table", "chart"}
    assert page(funnels["client"], "data", "?name=ordered").status_code == 404


def test_no_funnel_declared(analyst: Any) -> None:
    declared.forget()
    response = page(analyst, "changelist")
    assert response.status_code == 200 and b"No funnel is declared" in response.content


# The cohort table's second bitmap


def test_the_cohort_table_takes_a_second_bitmap(analyst: Any, frozen: float) -> None:
    today = Day.containing(frozen)
    signed, bought = UniqueBitmap("signed"), UniqueBitmap("bought", labels=("plan",))
    for user in (1, 2, 3, 4):
        signed.mark(user, moment(today.shift(-1), 60, now=frozen))
    bought.labels(plan="pro").mark(2, frozen)
    bought.labels(plan="free").mark(3, frozen)
    bought.labels(plan="free").mark(9, frozen)
    url = admin_url("uniquebitmapmetric", "detail")
    response = analyst.get(url, {"name": "signed", "cohort": "day", "returning": "bought"})
    assert response.status_code == 200
    assert response.context["returning"].name == "bought"
    cohort = response.context["cohort"]
    assert cohort[0]["size"] == 4 and cohort[0]["cells"][0] == (2, 50)
    html = response.content.decode()
    assert '<option value="bought" selected>bought</option>' in html
    assert "returning=bought" in response.context["cohort_links"][0][1]  # kept in the URL
    itself = analyst.get(url, {"name": "signed", "cohort": "day"})
    assert itself.context["returning"] is None
    assert itself.context["cohort"][0]["cells"][0] == (0, 0)
    assert analyst.get(url, {"name": "signed", "returning": "missing"}).status_code == 404
    UniqueBitmap("weekly", periods=("week",)).mark(1, frozen)
    weekly = analyst.get(url, {"name": "signed", "cohort": "day", "returning": "weekly"})
    assert weekly.status_code == 404
