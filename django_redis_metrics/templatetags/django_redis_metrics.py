"""``{% load django_redis_metrics %}``: the admin's live charts on the site's own staff pages.

``{% metric_chart "signups" precision=60 %}`` draws a counter, ``window=300`` an event series,
``period="day"`` a unique-users bitmap (``kind=`` settles a name used by several kinds);
``start``, ``end`` and ``compare`` work as on the admin pages. The same permission rules hold:
the tag renders nothing for anyone but active staff with ``view_metrics``, and the chart
refreshes itself from the admin's own JSON endpoints, which check that permission again. The
data reaches the page through ``json_script``; the vendored uPlot and ``charts.js`` are included
once per page, before the first chart.
"""

from __future__ import annotations

import itertools
from typing import Any

from django import template
from django.http import Http404, QueryDict
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import SafeString

from ..admin import annotating, bitmaps, charts, common, counters, events
from ..admin.common import with_query
from ..bitmaps import UniqueBitmap
from ..counter import Counter
from ..events import EventSeries
from ..permissions import may_view_metrics

register = template.Library()
KINDS = ("counter", "events", "uniques")
_ids = itertools.count(1)


def chosen_kind(kind: str | None, precision: Any, window: Any, period: Any) -> str:
    if kind is None:
        kind = "events" if window is not None else "uniques" if period is not None else "counter"
    if kind not in KINDS:
        raise template.TemplateSyntaxError(f"metric_chart: kind must be one of {KINDS}.")
    return kind


def build(
    kind: str, name: str, params: QueryDict, now: float, precision: Any, window: Any, period: Any
) -> tuple[charts.Chart, str, dict[str, Any]]:
    """The chart, its admin data endpoint (by URL suffix and model) and that endpoint's query."""
    query: dict[str, Any] = {"name": name, **charts.range_query(params)}
    if kind == "counter":
        counter = Counter.objects.get(name)
        step = counters.sparkline_precision(counter) if precision is None else int(precision)
        if step not in counter.precisions:
            raise ValueError(f"Counter {name!r} has no precision {step}.")
        query["precision"] = step
        chart = counters.counter_chart_data(counter, step, params, now)
        return chart, "countermetric_data", query
    if kind == "events":
        series = EventSeries.objects.get(name)
        size = events.EVENT_WINDOW_DEFAULT if window is None else int(window)
        if size not in events.EVENT_WINDOWS:
            raise ValueError(f"window must be one of {events.EVENT_WINDOWS}, not {size}.")
        query["window"] = size
        return events.series_chart_data(series, size, params, now), "eventseriesmetric_data", query
    bitmap = UniqueBitmap.objects.get(name)
    chosen = period or "day"
    if chosen not in bitmap.periods:
        raise ValueError(f"Bitmap {name!r} keeps no {chosen!r} periods.")
    counts, notes = bitmaps.period_reading(bitmap, now, [chosen])
    query = {"name": name, "period": chosen}
    chart = annotating.attach(bitmaps.period_chart(bitmap, chosen, counts[chosen]), notes)
    return chart, "uniquebitmapmetric_data", query


@register.simple_tag(takes_context=True)
def metric_chart(
    context: template.Context,
    name: str,
    precision: int | None = None,
    window: int | None = None,
    period: str | None = None,
    kind: str | None = None,
    height: int = 260,
    live: bool = True,
    admin_site: str = "admin",
    **ranges: Any,
) -> str:
    request = context.get("request")
    if request is None or not may_view_metrics(getattr(request, "user", None)):
        return ""
    unknown = set(ranges) - {"start", "end", "compare"}
    if unknown:
        raise template.TemplateSyntaxError(f"metric_chart takes no {', '.join(sorted(unknown))}.")
    params = QueryDict(mutable=True)
    params.update({key: str(value) for key, value in ranges.items() if value})
    chosen = chosen_kind(kind, precision, window, period)
    now = common.current_time()
    try:
        chart, endpoint, query = build(chosen, name, params, now, precision, window, period)
    except LookupError as exc:
        return render_to_string(
            "django_redis_metrics/embed.html", {"missing": str(exc)}, request=request
        )
    except Http404 as exc:
        raise ValueError(str(exc)) from None
    first = not getattr(request, "_drm_assets", False)
    request._drm_assets = True
    data_url = reverse(f"{admin_site}:django_redis_metrics_{endpoint}")
    payload = chart.payload(now)
    if not live:
        payload["refresh"] = None
    return SafeString(
        render_to_string(
            "django_redis_metrics/embed.html",
            {
                "assets": first,
                "chart_id": f"drm-embed-{next(_ids)}",
                "payload": payload,
                "data_url": with_query(data_url, **query),
                "height": height,
            },
            request=request,
        )
    )


@register.filter
def series_label(name: str) -> str:
    """``{{ name|series_label }}``: a metric's name, or a series' as ``hits{view=home}``."""
    return common.series_label(str(name))
