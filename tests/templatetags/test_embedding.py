"""``{% metric_chart %}``: the admin's live charts on the site's own staff pages, under the
same permission rules."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.template import Context, Template, TemplateSyntaxError
from django.test import RequestFactory

from django_redis_metrics import Counter, EventSeries, UniqueBitmap

from ..django_site import admin_url, make_user

pytestmark = pytest.mark.django_db

PAGE = """{% load django_redis_metrics %}<main>
{% metric_chart "signups" precision=60 %}
{% metric_chart "orders" window=300 compare="day" %}
{% metric_chart "visitors" period="week" live=False %}
</main>"""


def render(source: str, user: Any) -> str:
    request = RequestFactory().get("/staff/")
    request.user = user
    return Template(source).render(Context({"request": request}))


@pytest.fixture
def metrics(single: Any, settings: Any, frozen: float) -> float:
    settings.ROOT_URLCONF = "tests.integration.urls"
    Counter("signups", precisions=[60, 3600]).incr(4, when=frozen)
    EventSeries("orders").record(when=frozen - 5, kind="a")
    UniqueBitmap("visitors").mark(3, when=frozen)
    return frozen


def payloads(html: str) -> list[dict[str, Any]]:
    found = re.findall(
        r'<script id="(drm-embed-\d+-data)" type="application/json">(.*?)</script>', html
    )
    return [json.loads(text) for _, text in found]


def test_staff_with_the_permission_see_live_charts(metrics: float) -> None:
    html = render(PAGE, make_user("analyst", staff=True, permitted=True))
    assert html.count("vendor/uplot/uPlot.iife.min.js") == 1  # the assets once per page
    assert html.count("django_redis_metrics/charts.js") == 1
    signups, orders, visitors = payloads(html)
    assert signups["caption"] == "signups per minute" and signups["total"] == 4
    assert orders["caption"] == "orders per 5 minutes"
    assert [s["label"] for s in orders["series"]] == ["orders", "the day before"]
    assert visitors["period"] == "week" and visitors["series"][0]["values"][-1] == 1
    data = admin_url("countermetric", "data") + "?name=signups&amp;precision=60"
    assert f'data-url="{data}"' in html  # refreshed from the admin's own, checked endpoint
    assert html.count("data-url=") == 2  # live=False: the bitmap chart is not refreshed


@pytest.mark.parametrize(
    "who",
    [
        lambda: AnonymousUser(),
        lambda: make_user("clerk", staff=True, permitted=False),
        lambda: make_user("visitor", staff=False, permitted=True),
    ],
)
def test_everyone_else_sees_nothing(metrics: float, who: Any) -> None:
    html = render(PAGE, who())
    assert "drm-embed" not in html and "uPlot" not in html
    assert html.replace("\n", "") == "<main></main>"


def test_mistakes_are_clear(metrics: float) -> None:
    root = make_user("root", staff=True, permitted=False, superuser=True)
    missing = render('{% load django_redis_metrics %}{% metric_chart "nothing" %}', root)
    assert "No counter named &#x27;nothing&#x27; holds data" in missing
    with pytest.raises(ValueError, match="has no precision 7"):
        render('{% load django_redis_metrics %}{% metric_chart "signups" precision=7 %}', root)
    with pytest.raises(ValueError, match="window must be one of"):
        render('{% load django_redis_metrics %}{% metric_chart "orders" window=7 %}', root)
    with pytest.raises(TemplateSyntaxError, match="takes no colour"):
        render('{% load django_redis_metrics %}{% metric_chart "signups" colour=1 %}', root)
