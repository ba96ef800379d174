"""The admin pages and their JSON endpoints.

Every view here is reached only through :class:`django_redis_metrics.admin` URLs, which wrap it
in ``admin_site.admin_view`` (active staff, else the login page) and :func:`metrics_permission`
(the ``view_metrics`` permission, else 403). Metric names travel in query strings (``?name=``),
so any name works, and reach the page through autoescaped templates or ``json_script``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from redis.exceptions import NoScriptError

from .bitmaps import UniqueBitmap
from .catalogue import CataloguedMetric
from .connection import get_redis_connection
from .counter import Counter
from .events import VALUES_PER_CALL, EventSeries
from .keys import metric_key, to_str, validate_name
from .models import PERMISSION
from .periods import Period, period_class
from .scripts import script
from .timeutil import slice_start

ViewFunction = Callable[..., HttpResponse]

#: Points drawn on a counter's chart (fewer if the counter keeps fewer samples).
CHART_POINTS = 120
#: Points of a sparkline on the counters list.
SPARKLINE_POINTS = 60
#: The "latest totals" columns of the counters list: label and window in seconds.
TOTALS: tuple[tuple[str, int], ...] = (
    ("last minute", 60),
    ("last hour", 3600),
    ("last day", 86400),
)
PER_PAGE = 100


def score(timestamp: float) -> str:
    """A timestamp as Redis reads it back exactly (a sorted-set score bound)."""
    return repr(float(timestamp))


def current_time() -> float:
    """Now, in epoch seconds (one place, so that tests can hold the clock still)."""
    return time.time()


def metrics_permission(view: ViewFunction) -> ViewFunction:
    """Refuse users without the ``view_metrics`` permission (superusers have it)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        user: Any = request.user
        if not (user.is_active and user.is_staff and user.has_perm(PERMISSION)):
            raise PermissionDenied("You may not view metrics.")
        return view(request, *args, **kwargs)

    return wrapper


def refresh_seconds(precision: int) -> int:
    """How often a live chart asks for new data: every few seconds, never faster than 1 s."""
    return 2 if precision < 5 else 5


def label(seconds: int) -> str:
    """``60`` -> ``"1 min"``: a precision or window for people."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def name_param(request: HttpRequest) -> str:
    name = request.GET.get("name", "")
    try:
        return validate_name(name)
    except (TypeError, ValueError) as exc:
        raise Http404(str(exc)) from exc


# Counters


def window_plan(counter: Counter, seconds: int) -> tuple[int, int] | None:
    """The finest (precision, slices) covering the last ``seconds`` with stored samples."""
    for precision in counter.precisions:
        if precision <= seconds and seconds % precision == 0:
            slices = seconds // precision
            if slices <= counter.samples:
                return precision, slices
    return None


def sparkline_precision(counter: Counter) -> int:
    """The finest precision of at least a minute (else the coarsest one)."""
    coarse = [p for p in counter.precisions if p >= 60]
    return min(coarse) if coarse else max(counter.precisions)


def slice_starts(precision: int, count: int, now: float) -> list[int]:
    last = slice_start(now, precision)
    return [last - precision * i for i in range(count - 1, -1, -1)]


@dataclass
class CounterRow:
    counter: Counter
    sparkline: list[int]
    sparkline_precision: int
    totals: list[int | None]

    @property
    def name(self) -> str:
        return self.counter.name

    @property
    def points(self) -> str:
        """SVG polyline points (numbers only) of the sparkline, in a 120 x 24 box."""
        values = self.sparkline
        top = max(values) or 1
        step = 120 / max(len(values) - 1, 1)
        return " ".join(f"{i * step:.1f},{22 - 20 * v / top:.1f}" for i, v in enumerate(values))

    @property
    def precision_labels(self) -> str:
        return ", ".join(label(p) for p in self.counter.precisions)


def counter_rows(counters: Sequence[Counter], now: float) -> list[CounterRow]:
    """Sparkline and totals of many counters, fetched in one pipelined round trip."""
    pipe = get_redis_connection().pipeline(transaction=False)
    plans = []
    for counter in counters:
        spark = sparkline_precision(counter)
        pipe.hmget(
            counter.key(spark), slice_starts(spark, min(SPARKLINE_POINTS, counter.samples), now)
        )
        windows = [window_plan(counter, seconds) for _, seconds in TOTALS]
        for plan in windows:
            if plan is not None:
                pipe.hmget(counter.key(plan[0]), slice_starts(plan[0], plan[1], now))
        plans.append((counter, spark, windows))
    replies = iter(pipe.execute() if plans else [])
    rows = []
    for counter, spark, windows in plans:
        sparkline = [_int(value) for value in next(replies)]
        totals: list[int | None] = []
        for plan in windows:
            totals.append(None if plan is None else sum(_int(v) for v in next(replies)))
        rows.append(CounterRow(counter, sparkline, spark, totals))
    return rows


def _int(value: Any) -> int:
    return 0 if value is None else int(to_str(value))


M = TypeVar("M", bound=CataloguedMetric)


def stored_metrics(model: type[M], names: Sequence[str]) -> list[M]:
    """The metrics ``names`` as their writers configured them: one round trip."""
    if not names:
        return []
    pipe = get_redis_connection().pipeline(transaction=False)
    for name in names:
        pipe.hgetall(metric_key(model.KIND, name, "meta"))
    metrics = []
    for name, meta in zip(names, pipe.execute(), strict=True):
        try:
            metrics.append(model.from_meta(name, meta))
        except LookupError:  # listed, but retired or never configured meanwhile: defaults
            metrics.append(model(name))
    return metrics


def stored_counters(names: list[str]) -> list[Counter]:
    """The counters ``names`` as their writers configured them: one round trip."""
    return stored_metrics(Counter, names)


def listing_page(request: HttpRequest, names: list[str]) -> tuple[Any, str, int]:
    """(page of the names matching ``?q=``, the query, how many match): ``PER_PAGE`` a page."""
    query = request.GET.get("q", "").strip()
    if query:
        names = [name for name in names if query.lower() in name.lower()]
    return Paginator(names, PER_PAGE).get_page(request.GET.get("p")), query, len(names)


def counter_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    page, query, count = listing_page(request, Counter.objects.names())
    counters = stored_counters(list(page.object_list))
    now = current_time()
    context.update(
        title="Counters",
        rows=counter_rows(counters, now),
        totals_labels=[text for text, _ in TOTALS],
        page=page,
        query=query,
        count=count,
        noun="counter",
    )
    return TemplateResponse(request, "django_redis_metrics/admin/counter_list.html", context)


def get_counter(name: str) -> Counter:
    try:
        return Counter.objects.get(name)
    except LookupError as exc:
        raise Http404(str(exc)) from exc


def chosen_precision(request: HttpRequest, counter: Counter) -> int:
    raw = request.GET.get("precision")
    if raw is None:
        return sparkline_precision(counter)
    try:
        precision = int(raw)
    except ValueError as exc:
        raise Http404("precision must be a number of seconds.") from exc
    if precision not in counter.precisions:
        raise Http404(f"Counter {counter.name!r} has no precision {precision}.")
    return precision


def counter_payload(counter: Counter, precision: int) -> dict[str, Any]:
    """The zero-filled, epoch-aligned newest slices of one precision, for the chart."""
    now = current_time()
    points = counter.recent(precision, min(CHART_POINTS, counter.samples), until=now)
    return {
        "name": counter.name,
        "precision": precision,
        "refresh": refresh_seconds(precision),
        "points": [[start, value] for start, value in points],
        "total": sum(value for _, value in points),
        "generated": now,
    }


def with_query(url: str, **params: Any) -> str:
    return f"{url}?{urlencode(params)}"


def counter_chart(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    counter = get_counter(name_param(request))
    precision = chosen_precision(request, counter)
    urls = context["metrics_urls"]
    context.update(
        data_url=with_query(urls["data"], name=counter.name, precision=precision),
        precision_links=[
            (p, label(p), with_query(urls["chart"], name=counter.name, precision=p))
            for p in counter.precisions
        ],
        title=f"Counter {counter.name}",
        metric_name=counter.name,
        counter=counter,
        precision=precision,
        precision_label=label(precision),
        payload=counter_payload(counter, precision),
    )
    return TemplateResponse(request, "django_redis_metrics/admin/counter_chart.html", context)


def counter_data(request: HttpRequest) -> JsonResponse:
    counter = get_counter(name_param(request))
    return JsonResponse(counter_payload(counter, chosen_precision(request, counter)))


# Event series

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
VALUES_COUNTED = min(200, VALUES_PER_CALL)


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
    series_list = stored_metrics(EventSeries, list(page.object_list))
    now = current_time()
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
    client = get_redis_connection()
    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        for field_name in fields:
            pipe.scard(series.values_key(field_name))
            counter.queue(
                pipe,
                [series.values_key(field_name)],
                ["0", score(lo), score(hi), series.key("by", field_name, ""), VALUES_COUNTED],
            )
        replies = pipe.execute(raise_on_error=False)
        if attempt == 0 and any(isinstance(r, NoScriptError) for r in replies):
            counter.ensure_loaded(client)
            continue
        break
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
    now = current_time()
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
    return JsonResponse(series_payload(series, chosen_window(request), current_time()))


# Unique users (bitmaps)

#: How many of the newest periods the bitmap page shows, per kind of period.
PERIODS_SHOWN = {"hour": 48, "day": 30, "week": 12, "month": 12}
COHORT_PERIODS = 8


def get_bitmap(name: str) -> UniqueBitmap:
    try:
        return UniqueBitmap.objects.get(name)
    except LookupError as exc:
        raise Http404(str(exc)) from exc


def period_counts(bitmap: UniqueBitmap, now: float) -> dict[str, list[tuple[Period, int]]]:
    """Distinct users of the newest periods of every kind the bitmap keeps: one round trip."""
    pipe = get_redis_connection().pipeline(transaction=False)
    shown: dict[str, list[Period]] = {}
    for name in bitmap.periods:
        current = period_class(name).containing(now)
        periods = [current.shift(-i) for i in range(PERIODS_SHOWN[name] - 1, -1, -1)]
        shown[name] = periods
        for period in periods:
            pipe.bitcount(bitmap.key(period))
    replies = iter(pipe.execute() if shown else [])
    return {name: [(p, int(next(replies))) for p in periods] for name, periods in shown.items()}


def bitmap_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    """A page of bitmaps with today's, this week's and this month's uniques: two round trips."""
    page, query, count = listing_page(request, UniqueBitmap.objects.names())
    bitmaps = stored_metrics(UniqueBitmap, list(page.object_list))
    now = current_time()
    pipe = get_redis_connection().pipeline(transaction=False)
    shown = []
    for bitmap in bitmaps:
        kinds = [p for p in ("day", "week", "month") if p in bitmap.periods]
        for kind in kinds:
            pipe.bitcount(bitmap.key(period_class(kind).containing(now)))
        shown.append((bitmap, kinds))
    replies = iter(pipe.execute() if bitmaps else [])
    rows = [
        {"bitmap": bitmap, "counts": {kind: int(next(replies)) for kind in kinds}}
        for bitmap, kinds in shown
    ]
    context.update(
        title="Unique users", rows=rows, page=page, query=query, count=count, noun="bitmap"
    )
    return TemplateResponse(request, "django_redis_metrics/admin/bitmap_list.html", context)


def bitmap_detail(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    bitmap = get_bitmap(name_param(request))
    now = current_time()
    counts = period_counts(bitmap, now)
    charts = []
    for name, values in counts.items():
        charts.append(
            {
                "period": name,
                "id": f"uniques-{name}",
                "rows": [(str(p), value) for p, value in reversed(values)],
                "payload": {
                    "name": bitmap.name,
                    "period": name,
                    "points": [[p.start_ts, value] for p, value in values],
                },
            }
        )
    choices = [p for p in ("day", "week", "month") if p in bitmap.periods]
    cohort_period = request.GET.get("cohort") or next(
        (p for p in ("week", "day", "month") if p in choices), None
    )
    if cohort_period is not None and cohort_period not in choices:
        raise Http404(f"cohort must be one of {', '.join(choices)}.")
    cohort = []
    if cohort_period is not None:
        first = period_class(cohort_period).containing(now).shift(-(COHORT_PERIODS - 1))
        for i, row in enumerate(bitmap.cohort(cohort_period, first.start_ts, COHORT_PERIODS)):
            size = row[0] if row else 0
            cells = [(value, round(100 * value / size) if size else None) for value in row[1:]]
            cohort.append({"period": str(first.shift(i)), "size": size, "cells": cells})
    context.update(
        title=f"Unique users {bitmap.name}",
        metric_name=bitmap.name,
        bitmap=bitmap,
        charts=charts,
        cohort=cohort,
        cohort_period=cohort_period,
        cohort_offsets=list(range(1, COHORT_PERIODS)),
        cohort_links=[
            (p, with_query(context["metrics_urls"]["detail"], name=bitmap.name, cohort=p))
            for p in choices
        ],
    )
    return TemplateResponse(request, "django_redis_metrics/admin/bitmap_detail.html", context)
