"""The admin's gauge pages: the list (latest value and when it was set), and a chart per gauge:
the last value of each slice with its min-max band."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ..core.drive import gather
from ..core.keys import to_str
from ..gauge import Gauge
from ..models import GaugeMetric
from . import annotating, breakdown, common, export, history, labels
from .charts import Chart, Series, Span
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
    key = history.chosen(request.GET)
    if key is not None:
        return gauge_history(gauge, key, now)
    return gauge_reading(gauge, precision, request, now)[0]


def gauge_history(gauge: Gauge, key: str, now: float) -> Chart:
    """A year, five years or all of ``gauge`` by day: each day's last value with its min-max
    band, from Redis' days and the archive's (``Gauge.history``)."""
    precision = history.daily_precision(gauge)
    oldest = history.oldest_archived(gauge.KIND, gauge.name)
    span = history.day_span(key, now, oldest, additive=False)
    found = history.placed(gauge.history(precision, span.first, span.last + span.step - 1), span)
    days = [day if isinstance(day, dict) and day.get("last") is not None else None for day in found]
    return history.history_chart(
        gauge.name,
        "gauge",
        span,
        [
            (LAST, [None if d is None else d["last"] for d in days], None),
            (BAND_LOW, [None if d is None else d["min"] for d in days], "low"),
            (BAND_HIGH, [None if d is None else d["max"] for d in days], "high"),
        ],
        integer=False,
    )


def gauge_reading(
    gauge: Gauge, precision: int, request: HttpRequest, now: float
) -> tuple[Chart, GaugeBreakdown | None]:
    """The chart, and for a labelled gauge its breakdown (``None`` for a plain gauge)."""
    span, texts, members, notes = read_span(gauge, precision, request.GET, now)
    found = [slice_values(text) for text in texts]
    if members:
        added, parts, reading = gauge_parts(gauge, members, request, span)
        chart = band_chart(gauge, "gauge", span, [(ADDED, added, None)])
        chart.series += parts
        return annotating.attach(chart, notes), reading
    chart = band_chart(
        gauge,
        "gauge",
        span,
        [
            (LAST, [None if v is None else v[0] for v in found], None),
            (BAND_LOW, [None if v is None else v[1] for v in found], "low"),
            (BAND_HIGH, [None if v is None else v[2] for v in found], "high"),
        ],
    )
    return annotating.attach(chart, notes), None


@dataclass
class GaugeBreakdown:
    """A labelled gauge's series read for its page: what its table shows."""

    found: breakdown.Found
    rows: list[breakdown.Row]
    others: breakdown.Row | None


#: A labelled gauge's main line: its series' last values added up, slice by slice.
ADDED = "last, added up"
#: The breakdown table's columns: ``(sort key, heading)``.
GAUGE_COLUMNS = (("value", "Value"), ("last", "Last"), ("mean", "Mean"), ("max", "Max"))


def gauge_parts(
    gauge: Gauge, members: list[Any], request: HttpRequest, span: Span
) -> tuple[list[float | None], list[Series], GaugeBreakdown]:
    """A labelled gauge's series over ``span`` grouped by the chosen label: per slice the last
    values of the chosen series added up (as ``group_by(label)`` adds them), the top values'
    lines (by their last value in the range) and "others"."""
    n = len(span.starts)
    found = breakdown.read(gauge, members, request.GET, span.step, span.starts)
    groups = {value: _added(texts, n) for value, texts in found.groups.items()}
    rest = _added(found.rest, n)
    lasts = {value: _figures(line)["last"] or 0.0 for value, line in groups.items()}
    top = breakdown.top_values(lasts)
    beyond = [
        _add([line[i] for v, line in groups.items() if v not in top] + [rest[i]]) for i in range(n)
    ]
    main = [_add([*(groups[v][i] for v in top), beyond[i]]) for i in range(n)]
    by = found.choice.by
    parts = [Series(breakdown.line_label(by, v), groups[v], part=True) for v in top]
    rows = [breakdown.Row(v, _figures(groups[v])) for v in groups if v in top]
    others = None
    if any(value is not None for value in beyond):
        parts.append(Series(breakdown.OTHERS, beyond, part=True))
        others = breakdown.Row(breakdown.OTHERS, _figures(beyond), others=True)
    return main, parts, GaugeBreakdown(found, rows, others)


def _added(texts: list[list[Any]], n: int) -> list[float | None]:
    """Per slice, the last values of several series added (``None``: none was set)."""
    lasts = [[None if v is None else v[0] for v in map(slice_values, series)] for series in texts]
    return [_add([series[i] for series in lasts]) for i in range(n)]


def _add(values: list[float | None]) -> float | None:
    held = [value for value in values if value is not None]
    return sum(held) if held else None


def _figures(line: list[float | None]) -> dict[str, float | None]:
    held = [value for value in line if value is not None]
    if not held:
        return {"last": None, "mean": None, "max": None}
    return {"last": held[-1], "mean": sum(held) / len(held), "max": max(held)}


def gauge_chart(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    gauge = get_metric(Gauge, name_param(request))
    precision = chosen_precision(request, gauge)
    now = common.current_time()
    key = history.chosen(request.GET)
    if key is not None:
        chart, reading = gauge_history(gauge, key, now), None
    else:
        chart, reading = gauge_reading(gauge, precision, request, now)
    latest = gauge.latest()
    extra = [] if reading is None else reading.found.choice.pairs()
    context.update(chart_context(request, context, gauge, precision, chart, now, extra))
    context.update(
        title=f"Gauge {gauge.name}",
        current=None if latest is None else latest[1],
        current_at=None if latest is None else labels.instant_label(latest[0], 1),
    )
    if reading is not None:
        context["breakdown"] = breakdown.table(
            request, reading.found, reading.rows, reading.others, GAUGE_COLUMNS, "-last"
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
