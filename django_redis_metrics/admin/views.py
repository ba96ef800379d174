"""The Views page: per view, requests, error rates (4xx, 5xx) and mean, p95 and max response
times over the last hour and the last day (``viewstats.py``), sortable by any column
(``?o=-mean_hour``; slowest first by default), each figure linking to the chart it comes from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse

from ..core.connection import get_redis_connection
from . import common, labels
from .common import label, with_query
from .counters import window_plan
from .tilebase import chart_query
from .viewstats import WINDOWS, Figures, ViewMetrics, find_views, view_figures

#: Columns of each window: ``(key, heading, Figures attribute)``.
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("requests", "Requests", "requests"),
    ("client", "4xx %", "client_rate"),
    ("server", "5xx %", "server_rate"),
    ("mean", "Mean ms", "mean"),
    ("p95", "p95 ms", "p95"),
    ("max", "Max ms", "max"),
)
#: The sort keys ``?o=`` takes (``-`` before one: descending).
SORT_KEYS = ("view", *(f"{col}_{win}" for win, _, _ in WINDOWS for col, _, _ in COLUMNS))
#: Slowest first: the highest mean response time over the last hour.
DEFAULT_ORDER = "-mean_hour"


def chosen_order(request: HttpRequest) -> tuple[str, bool]:
    """``(sort key, descending)`` from ``?o=``; an unknown key falls back to the default."""
    raw = request.GET.get("o") or DEFAULT_ORDER
    key = raw.lstrip("-")
    if key not in SORT_KEYS:
        raw, key = DEFAULT_ORDER, DEFAULT_ORDER.lstrip("-")
    return key, raw.startswith("-")


def sort_value(row: dict[str, Any], key: str) -> Any:
    if key == "view":
        return row["view"]
    column, window = key.rsplit("_", 1)
    attribute = next(attr for col, _, attr in COLUMNS if col == column)
    return getattr(row["figures"][window], attribute)


def sorted_rows(rows: list[dict[str, Any]], key: str, descending: bool) -> list[dict[str, Any]]:
    """Rows by ``key``, ties by view name; rows without that figure always last."""
    rows = sorted(rows, key=lambda row: row["view"])
    known = [row for row in rows if sort_value(row, key) is not None]
    unknown = [row for row in rows if sort_value(row, key) is None]
    return sorted(known, key=lambda row: sort_value(row, key), reverse=descending) + unknown


def headers(request: HttpRequest, key: str, descending: bool) -> list[dict[str, Any]]:
    """Each sortable column's link: a click sorts by it (numbers largest first), a second
    click reverses it."""
    headings = {col: heading for col, heading, _ in COLUMNS}
    found = []
    for sort_key in SORT_KEYS:
        numeric = sort_key != "view"
        current = sort_key == key
        flip = not descending if current else numeric
        found.append(
            {
                "key": sort_key,
                "text": "View" if sort_key == "view" else headings[sort_key.split("_")[0]],
                "url": with_query(request.path, o=("-" if flip else "") + sort_key),
                "sorted": ("descending" if descending else "ascending") if current else "",
            }
        )
    return found


def chart_links(namespace: str) -> Callable[[str, str, int | None], str]:
    """``link(model, name, precision)``: the URL of a metric's chart page."""
    urls = {
        "statistic": reverse(f"{namespace}:django_redis_metrics_statisticmetric_chart"),
        "counter": reverse(f"{namespace}:django_redis_metrics_countermetric_chart"),
    }

    def link(model: str, name: str, precision: int | None) -> str:
        query: dict[str, Any] = chart_query(name)
        if precision is not None:
            query["precision"] = precision
        return with_query(urls[model], **query)

    return link


def requests_url(view: ViewMetrics, seconds: int, found: Figures, link: Callable[..., str]) -> str:
    """The chart behind a window's request count: the 2xx answers (the series of the view's
    most requests), else the hit counter, at the precision covering the window."""
    if view.status.get("2xx") and found.counter_precision:
        return link("counter", view.status["2xx"][0].name, found.counter_precision)
    if view.hits:
        plan = window_plan(view.hits[0], seconds)
        return link("counter", view.hits[0].name, plan[0] if plan else None)
    return ""


def row_of(
    view: ViewMetrics, figures: dict[str, Figures], link: Callable[..., str]
) -> dict[str, Any]:
    windows = []
    for key, _, seconds in WINDOWS:
        found = figures[key]
        status = view.status
        windows.append(
            {
                "figures": found,
                "requests_url": requests_url(view, seconds, found, link),
                "client_url": link("counter", status["4xx"][0].name, found.counter_precision)
                if status.get("4xx")
                else "",
                "server_url": link("counter", status["5xx"][0].name, found.counter_precision)
                if status.get("5xx")
                else "",
                "timer_url": link("statistic", view.timer.name, found.timer_precision)
                if view.timer is not None
                else "",
            }
        )
    return {
        "view": view.view,
        "metrics": view,
        "figures": figures,
        "windows": windows,
        "url": link("statistic", view.timer.name, None) if view.timer else "",
        "hits_url": link("counter", view.hits[0].name, None) if view.hits else "",
    }


def plan_notes(used: set[tuple[str, str, int, int]]) -> list[str]:
    """What each window's figures cover, said plainly (one line per distinct plan)."""
    headings = {key: heading for key, heading, _ in WINDOWS}
    notes = []
    for window, kind, precision, slices in sorted(used, key=lambda u: (u[0] != "hour", u[1:])):
        notes.append(
            f"{headings[window]}, {kind}s: the newest {slices} slices of {label(precision)}, "
            f"the current one included (between {label(precision * (slices - 1))} and "
            f"{label(precision * slices)} of data)."
        )
    return notes


def views_page(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    now = common.current_time()
    views = find_views(get_redis_connection())
    figures, used = view_figures(views, now)
    namespace = request.resolver_match.namespace if request.resolver_match else "admin"
    link = chart_links(namespace)
    key, descending = chosen_order(request)
    rows = sorted_rows(
        [row_of(v, f, link) for v, f in zip(views, figures, strict=True)], key, descending
    )
    all_headers = headers(request, key, descending)
    context.update(
        title="Views",
        rows=rows,
        view_header=all_headers[0],
        window_headers=[
            (heading, all_headers[1 + i * len(COLUMNS) : 1 + (i + 1) * len(COLUMNS)])
            for i, (_, heading, _) in enumerate(WINDOWS)
        ],
        order=("-" if descending else "") + key,
        notes=plan_notes(used),
        zone_label=labels.zone_label(now),
        as_of=labels.instant_label(now, 1),
    )
    return TemplateResponse(request, "django_redis_metrics/admin/views.html", context)
