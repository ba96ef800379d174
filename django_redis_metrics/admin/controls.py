"""The controls above a chart: compare with the previous period, and pick a range."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from .charts import COMPARE, input_value
from .common import with_query
from .labels import instant_label, zone_label


def compare_links(
    chart_url: str, query: dict[str, Any], current: str
) -> list[tuple[str, str, str]]:
    """``(value, text, url)`` of each ``?compare=`` choice, keeping the page's other choices."""
    base = {key: value for key, value in query.items() if key != "compare"}
    choices = [("", "nothing"), *((key, text) for key, (_, text) in COMPARE.items())]
    return [
        (key, text, with_query(chart_url, **base, **({"compare": key} if key else {})))
        for key, text in choices
    ]


def range_form(
    request: HttpRequest, hidden: dict[str, Any], oldest: float, now: float, step: int = 60
) -> dict[str, Any]:
    """What the range form shows: the page's fixed parameters, the chosen range and the
    bounds of what is kept (``datetime-local`` values in the site's zone)."""
    return {
        "hidden": sorted(hidden.items()),
        "start": request.GET.get("start", ""),
        "end": request.GET.get("end", ""),
        "compare": request.GET.get("compare", ""),
        "compare_choices": [(key, text) for key, (_, text) in COMPARE.items()],
        "min": input_value(oldest),
        "max": input_value(now),
        "min_label": instant_label(oldest, step),
        "zone": zone_label(now),
    }
