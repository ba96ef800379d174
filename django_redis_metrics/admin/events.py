"""The admin's event series pages: the list, and a series' chart, top values and newest events."""

from __future__ import annotations

from typing import Any

from django.http import Http404, HttpRequest, JsonResponse
from django.template.response import TemplateResponse

from ..core.batch import read_with_scripts
from ..core.connection import get_redis_connection
from ..core.keys import to_str
from ..core.timeutil import slice_start
from ..events import EventSeries
from ..events.codec import score
from ..events.queries import script
from . import common
from .common import label, listing_page, name_param, refresh_seconds, with_query

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
    raw = request.GET.get("window", str(EVENT_WINDOW_DEFAULT))
    if not raw.isdigit() or int(raw) not in EVENT_WINDOWS:
        raise Http404(f"window must be one of {EVENT_WINDOWS}.")
    return int(raw)


def series_payload(series: EventSeries, window: int, now: float) -> dict[str, Any]:
    """Events per aligned window over the last ``EVENT_POINTS`` windows."""
    start = now - (EVENT_POINTS - 1) * window
    counts = series.counts(start, now, window)
    first = slice_start(start, window)
    return {
        "name": series.name,
        "window": window,
        "refresh": refresh_seconds(window),
        "points": [[first + i * window, value] for i, value in enumerate(counts)],
        "total": sum(counts),
        "generated": now,
    }


def event_series_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    """A page of series with their recent counts: two round trips, whatever the page holds."""
    page, query, count = listing_page(request, EventSeries.objects.names())
    series_list = EventSeries.objects.many(page.object_list)
    now = common.current_time()
    pipe = get_redis_connection().pipeline(transaction=False)
    for series in series_list:
        pipe.zcount(series.time_key, score(now - 3600), score(now))
        pipe.zcount(series.time_key, score(now - 86400), score(now))
        pipe.zcard(series.time_key)
    replies = iter(pipe.execute() if series_list else [])
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

    def fill(pipe: Any) -> None:
        for field_name in fields:
            pipe.scard(series.values_key(field_name))
            counter.queue(
                pipe,
                [series.values_key(field_name)],
                ["0", score(lo), score(hi), series.key("by", field_name, ""), VALUES_COUNTED],
            )

    replies = read_with_scripts(get_redis_connection(), fill, [counter])
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


def event_series_detail(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    series = get_series(name_param(request))
    window = chosen_window(request)
    now = common.current_time()
    payload = series_payload(series, window, now)
    start = payload["points"][0][0]
    by_field = field_counts(series, start, now)
    newest = []
    for event in series.latest(NEWEST_EVENTS):
        fields = {k: v for k, v in event.items() if k not in ("id", "timestamp")}
        newest.append(
            {
                "id": event["id"],
                "timestamp": event["timestamp"],
                "fields": sorted(fields.items()),
            }
        )
    urls = context["metrics_urls"]
    context.update(
        title=f"Event series {series.name}",
        metric_name=series.name,
        series=series,
        window=window,
        data_url=with_query(urls["data"], name=series.name, window=window),
        window_links=[
            (w, label(w), with_query(urls["detail"], name=series.name, window=w))
            for w in EVENT_WINDOWS
        ],
        window_label=label(window),
        span_label=label(window * EVENT_POINTS),
        payload=payload,
        by_field=by_field,
        fields_hidden=max(len(series.index) - FIELDS_SHOWN, 0),
        values_counted=VALUES_COUNTED,
        top_values=TOP_VALUES,
        newest=newest,
    )
    return TemplateResponse(request, "django_redis_metrics/admin/event_series_detail.html", context)


def event_series_data(request: HttpRequest) -> JsonResponse:
    series = get_series(name_param(request))
    return JsonResponse(series_payload(series, chosen_window(request), common.current_time()))
