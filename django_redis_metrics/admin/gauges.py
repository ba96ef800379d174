"""The admin's gauge pages: the list (latest value and when it was set), and a chart per gauge:
the last value of each slice with its min-max band."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ..core.drive import gather
from ..core.keys import to_str
from ..gauge import Gauge
from ..models import GaugeMetric
from . import common, export, labels
from .charts import Chart
from .common import KindPages, listing_page, name_param
from .sliced import band_chart, chart_context, chosen_precision, get_metric, read_span

#: The legend of a gauge chart's lines: the main line, then the band's low and high edges.
LAST, BAND_LOW, BAND_HIGH = "last", "min (band's low edge)", "max (band's high edge)"


def slice_values(text: Any) -> tuple[float, float, float] | None:
    """``(last, min, max)`` of a gauge's slice as stored (``time,last,min,max``; see
    ``Gauge.series``), ``None`` for an empty slice."""
    if text is None:
        return None
    _, last, low, high = (float(part) for part in to_str(text).split(","))
    return last, low, high


def gauge_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    """A page of gauges with their latest value: two round trips (configuration, latest)."""
    page, query, count = listing_page(request, Gauge.objects.get_queryset())
    gauges = list(page.object_list)
    rows = []
    for gauge, latest in zip(gauges, gather([g._latest_steps() for g in gauges]), strict=True):
        if isinstance(latest, Exception):
            raise latest
        rows.append(
            {
                "gauge": gauge,
                "value": None if latest is None else latest[1],
                "when": None if latest is None else labels.instant_label(latest[0], 1),
            }
        )
    context.update(
        title="Gauges",
        rows=rows,
        page=page,
        query=query,
        count=count,
        noun="gauge",
        zone_label=labels.zone_label(common.current_time()),
    )
    return TemplateResponse(request, "django_redis_metrics/admin/gauge_list.html", context)


def gauge_chart_data(gauge: Gauge, precision: int, request: HttpRequest, now: float) -> Chart:
    span, texts = read_span(gauge, precision, request.GET, now)
    found = [slice_values(text) for text in texts]
    return band_chart(
        gauge,
        "gauge",
        span,
        [
            (LAST, [None if v is None else v[0] for v in found], None),
            (BAND_LOW, [None if v is None else v[1] for v in found], "low"),
            (BAND_HIGH, [None if v is None else v[2] for v in found], "high"),
        ],
    )


def gauge_chart(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    gauge = get_metric(Gauge, name_param(request))
    precision = chosen_precision(request, gauge)
    now = common.current_time()
    chart = gauge_chart_data(gauge, precision, request, now)
    latest = gauge.latest()
    context.update(chart_context(request, context, gauge, precision, chart, now))
    context.update(
        title=f"Gauge {gauge.name}",
        current=None if latest is None else latest[1],
        current_at=None if latest is None else labels.instant_label(latest[0], 1),
    )
    return TemplateResponse(request, "django_redis_metrics/admin/gauge_chart.html", context)


def gauge_data(request: HttpRequest) -> HttpResponse:
    """The chart's data as JSON (``format=json``, the default) or CSV (``format=csv``)."""
    gauge = get_metric(Gauge, name_param(request))
    precision = chosen_precision(request, gauge)
    return export.respond(
        request, gauge_chart_data(gauge, precision, request, common.current_time())
    )


#: This kind's entry in the admin (its registry entry names it: ``Kind.admin``).
PAGES = KindPages(
    model=GaugeMetric,
    index=gauge_list,
    pages=(("chart/", gauge_chart, "chart"),),
    endpoints=(("data/", gauge_data, "data"),),
)
