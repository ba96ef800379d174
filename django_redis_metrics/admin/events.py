"""The admin's event series pages: the list, and a series' chart, top values and newest events."""

from __future__ import annotations

import math
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.template.response import TemplateResponse

from ..core.drive import drive, gather
from ..core.gather import pipelined_steps
from ..core.keys import to_str
from ..core.steps import Op, Script, Steps, pipe_steps
from ..events import EventSeries
from ..events.codec import score
from ..events.queries import script
from ..models import EventSeriesMetric
from . import annotating, charts, common, export, history, labels
from .common import KindPages, label, listing_page, name_param, refresh_seconds, with_query
from .controls import compare_links, range_form

#: Window choices of an event series' chart, in seconds.
EVENT_WINDOWS = (60, 300, 3600, 86400)
EVENT_WINDOW_DEFAULT = 300
#: Windows on an event series' chart.
EVENT_POINTS = 60
NEWEST_EVENTS = 20
#: Values shown per indexed field (the most frequent of those counted).
TOP_VALUES = 20
#: Indexed fields shown on an event series' page.
FIELDS_SHOWN = 10
#: Values of each shown field counted per page load (one SSCAN step: a COUNT hint, so about
#: this many), all fields in one pipelined round trip; fields with more values say so.
VALUES_COUNTED = min(200, EventSeries.VALUES_PER_CALL)


def get_series(name: str) -> EventSeries:
    try:
        return EventSeries.objects.get(name)
    except LookupError as exc:
        raise Http404(str(exc)) from exc


def chosen_window(request: HttpRequest) -> int:
    """The ``window`` parameter, one of ``EVENT_WINDOWS``, matched as text: a string that
    only looks like digits ("²", thousands of digits) is a 404, never a 500."""
    raw = request.GET.get("window", str(EVENT_WINDOW_DEFAULT))
    for window in EVENT_WINDOWS:
        if raw == str(window):
            return window
    raise Http404(f"window must be one of {EVENT_WINDOWS}.")


def series_chart_data(
    series: EventSeries, window: int, params: QueryDict, now: float
) -> charts.Chart:
    """Events per aligned window over the chosen range (default: the last ``EVENT_POINTS``
    windows) with its annotations, read together (the gather driver), and over the same
    windows a day or a week earlier with ``?compare=``."""
    oldest = now - series.retention
    span = charts.chosen_span(params, window, now, oldest, EVENT_POINTS)
    end = now if span.live else math.nextafter(span.last + window, -math.inf)
    counts, notes = gather(
        [series._counts_steps(span.first, end, window, True), one_read(annotating.read_op(span))]
    )
    for result in (counts, notes):
        if isinstance(result, Exception):
            raise result
    chart = charts.slice_chart(series.name, "events", span, counts, refresh_seconds(window))
    annotating.attach(chart, notes)
    compare = charts.chosen_compare(params)
    if compare is not None:
        offset, text = compare
        before = series.counts(span.first - offset, end - offset, window)
        previous: list[int | None] = [
            value if start - offset >= oldest else None
            for start, value in zip(span.starts, before, strict=True)
        ]
        chart.series.append(charts.Series(text, previous, compare=True))
        if None in previous:
            chart.notes.append(
                f"Events are kept {label(int(series.retention))}: {text} is partly beyond that."
            )
    return chart


def series_history(series: EventSeries, key: str, now: float) -> charts.Chart:
    """Events per day (the site's days, as the series counts them) over a year, five years or
    all (the newest 2,000 days): the days Redis keeps from Redis, older ones from the archive
    (``EventSeries.history``)."""
    return history.periods_chart(
        series, "events", "day", key, now, series.history, f"{series.name}: events per day"
    )


def one_read(op: Op) -> Steps[Any]:
    """A read of one command, for the gather driver."""
    return (yield op)


def event_series_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    """A page of series with their recent counts: two round trips, whatever the page holds."""
    page, query, count = listing_page(request, EventSeries.objects.get_queryset())
    series_list = list(page.object_list)
    now = common.current_time()
    ops: list[Op] = []
    for series in series_list:
        ops.append(Op("zcount", series.time_key, score(now - 3600), score(now)))
        ops.append(Op("zcount", series.time_key, score(now - 86400), score(now)))
        ops.append(Op("zcard", series.time_key))
    replies = iter(drive(pipe_steps(ops)))
    rows = [
        {
            "series": series,
            "hour": int(next(replies)),
            "day": int(next(replies)),
            "total": int(next(replies)),
        }
        for series in series_list
    ]
    context.update(
        title="Event series", rows=rows, page=page, query=query, count=count, noun="event series"
    )
    return TemplateResponse(request, "django_redis_metrics/admin/event_series_list.html", context)


def field_counts(series: EventSeries, lo: float, hi: float) -> list[dict[str, Any]]:
    """Top values of the first ``FIELDS_SHOWN`` indexed fields over ``[lo, hi]``: about
    ``VALUES_COUNTED`` values counted per field, every field in one pipelined round trip."""
    fields = series.index[:FIELDS_SHOWN]
    if not fields:
        return []
    counter = script("events_count_index")

    reads: list[Op | Script] = []
    for field_name in fields:
        values_key = series.values_key(field_name)
        reads.append(Op("scard", values_key))
        args: list[str | int] = [
            "0",
            score(lo),
            score(hi),
            series.key("by", field_name, ""),
            VALUES_COUNTED,
        ]
        reads.append(Script(counter, [values_key], args))
    replies = drive(pipelined_steps(reads))
    blocks = []
    for i, field_name in enumerate(fields):
        distinct, reply = replies[2 * i], replies[2 * i + 1]
        for answer in (distinct, reply):
            if isinstance(answer, Exception):
                raise answer
        counts = {to_str(reply[j]): int(reply[j + 1]) for j in range(1, len(reply), 2)}
        top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:TOP_VALUES]
        blocks.append(
            {
                "field": field_name,
                "values": top,
                "distinct": int(distinct),
                "partial": to_str(reply[0]) != "0",
            }
        )
    return blocks


def newest_events(series: EventSeries) -> list[dict[str, Any]]:
    """The newest events, their times labelled in the site's zone."""
    newest = []
    for event in series.latest(NEWEST_EVENTS):
        fields = {k: v for k, v in event.items() if k not in ("id", "timestamp")}
        newest.append(
            {
                "id": event["id"],
                "timestamp": event["timestamp"],
                "time": labels.instant_label(event["timestamp"], 1),
                "iso": labels.iso_instant(event["timestamp"]),
                "fields": sorted(fields.items()),
            }
        )
    return newest


def event_series_detail(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    series = get_series(name_param(request))
    window = chosen_window(request)
    now = common.current_time()
    key = history.chosen(request.GET)
    if key is not None:
        chart = series_history(series, key, now)
    else:
        chart = series_chart_data(series, window, request.GET, now)
    end = now if chart.partial else chart.x[-1] + window
    by_field = field_counts(series, chart.x[0], end)
    urls = context["metrics_urls"]
    kept = charts.range_query(request.GET)
    query = {"name": series.name, "window": window, **kept}
    context.update(
        title=f"Event series {series.name}",
        metric_name=series.name,
        series=series,
        window=window,
        data_url=with_query(urls["data"], **query),
        export_urls=export.links(urls["data"], query),
        window_links=[
            (w, label(w), with_query(urls["detail"], name=series.name, window=w, **kept))
            for w in EVENT_WINDOWS
        ],
        compare_links=compare_links(urls["detail"], query, request.GET.get("compare", "")),
        history_links=history.links(urls["detail"], {"name": series.name}, key),
        history_range=key,
        range_form=range_form(
            request, {"name": series.name, "window": window}, now - series.retention, now, window
        ),
        window_label=label(window),
        span_text=f"{chart.labels[0]} to {labels.instant_label(end, 1)}",
        chart=chart,
        payload=chart.payload(now),
        by_field=by_field,
        fields_hidden=max(len(series.index) - FIELDS_SHOWN, 0),
        values_counted=VALUES_COUNTED,
        top_values=TOP_VALUES,
        newest=newest_events(series),
        zone_label=labels.zone_label(now),
    )
    return TemplateResponse(request, "django_redis_metrics/admin/event_series_detail.html", context)


def event_series_data(request: HttpRequest) -> HttpResponse:
    """The chart's data as JSON (the default) or CSV (``format=csv``)."""
    series = get_series(name_param(request))
    now = common.current_time()
    key = history.chosen(request.GET)
    if key is not None:
        return export.respond(request, series_history(series, key, now))
    chart = series_chart_data(series, chosen_window(request), request.GET, now)
    return export.respond(request, chart)


#: This kind's entry in the admin (its registry entry names it: ``Kind.admin``).
PAGES = KindPages(
    model=EventSeriesMetric,
    index=event_series_list,
    pages=(("detail/", event_series_detail, "detail"),),
    endpoints=(("data/", event_series_data, "data"),),
)
