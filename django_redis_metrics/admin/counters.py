"""The admin's counter pages: the list with sparklines and totals, a live chart per counter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.template.response import TemplateResponse

from ..core.drive import drive
from ..core.sliced import SlicedMetric
from ..core.steps import Op, pipe_steps
from ..core.timeutil import slice_start, slice_starts
from ..counter import Counter
from ..models import CounterMetric
from . import annotating, breakdown, charts, common, export, history
from .common import KindPages, as_int, label, listing_page, name_param, refresh_seconds, with_query
from .controls import compare_links, range_form

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


def window_plan(counter: Counter | SlicedMetric, seconds: int) -> tuple[int, int] | None:
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
    def shown_name(self) -> str:
        """The name, or a series' ``name{label=value, ...}``."""
        return common.series_label(self.counter.name)

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
    """Sparkline and totals of many counters, fetched in one pipelined round trip; a read
    wanted twice (by default the sparkline and the last hour are the same 60 minutes) is sent
    once."""
    ops: list[Op] = []
    sent: dict[tuple[str, tuple[int, ...]], int] = {}

    def read(key: str, starts: list[int]) -> int:
        wanted = (key, tuple(starts))
        if wanted not in sent:
            sent[wanted] = len(ops)
            ops.append(Op("hmget", key, starts))
        return sent[wanted]

    plans = []
    for counter in counters:
        spark = sparkline_precision(counter)
        sparkline = read(
            counter.key(spark), slice_starts(spark, min(SPARKLINE_POINTS, counter.samples), now)
        )
        windows = [window_plan(counter, seconds) for _, seconds in TOTALS]
        totals = [
            None if plan is None else read(counter.key(plan[0]), slice_starts(*plan, now))
            for plan in windows
        ]
        plans.append((counter, spark, sparkline, totals))
    replies = drive(pipe_steps(ops))
    return [
        CounterRow(
            counter,
            [as_int(value) for value in replies[sparkline]],
            spark,
            [None if at is None else sum(as_int(v) for v in replies[at]) for at in totals],
        )
        for counter, spark, sparkline, totals in plans
    ]


def counter_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    page, query, count = listing_page(request, Counter.objects.get_queryset())
    counters = list(page.object_list)
    now = common.current_time()
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
    """The counter ``name`` (a labelled one too, found by its series), else ``Http404``."""
    return breakdown.find(Counter, name)


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


def kept_since(counter: Counter, precision: int, now: float) -> int:
    """The start of the oldest slice of ``precision`` the counter keeps."""
    return slice_start(now, precision) - (counter.samples - 1) * precision


def counter_chart_data(
    counter: Counter, precision: int, params: QueryDict, now: float
) -> charts.Chart:
    """The chosen range of one precision's slices, zero-filled, and the previous period's
    (``?compare=``) where this precision still keeps it: one pipelined round trip (a labelled
    counter's series in one more, ``breakdown.py``). With ``?history=``, the daily history."""
    key = history.chosen(params)
    if key is not None:
        return counter_history(counter, key, now)
    return counter_reading(counter, precision, params, now)[0]


def counter_history(counter: Counter, key: str, now: float) -> charts.Chart:
    """A year, five years or all of ``counter`` by day (by week past 2,000 days): Redis'
    days and the archive's, as ``Counter.history`` reads them."""
    precision = history.daily_precision(counter)
    return history.counts_chart(
        counter.name,
        "counter",
        key,
        now,
        history.oldest_archived(counter.KIND, counter.name),
        lambda start, end: counter.history(precision, start, end),
    )


@dataclass
class CounterBreakdown:
    """A labelled counter's series read for its page: what its table shows."""

    found: breakdown.Found
    rows: list[breakdown.Row]
    others: breakdown.Row | None


def counter_reading(
    counter: Counter, precision: int, params: QueryDict, now: float
) -> tuple[charts.Chart, CounterBreakdown | None]:
    """The chart, and for a labelled counter its breakdown (``None`` for a plain counter)."""
    oldest = kept_since(counter, precision, now)
    points = charts.chosen_points(params, min(CHART_POINTS, counter.samples))
    span = charts.chosen_span(params, precision, now, oldest, points)
    compare = charts.chosen_compare(params)
    ops = [Op("hmget", counter.key(precision), span.starts)]
    if compare is not None:
        ops.append(
            Op("hmget", counter.key(precision), [start - compare[0] for start in span.starts])
        )
    ops.append(annotating.read_op(span))
    replies = drive(pipe_steps([*ops, breakdown.listing_op(counter)]))
    values = [as_int(v) for v in replies[0]]
    before = None if compare is None else [as_int(v) for v in replies[1]]
    parts: list[charts.Series] = []
    found = None
    if replies[-1]:
        values, before, parts, found = counter_parts(
            counter, replies[-1], params, span, compare, values, before
        )
    chart = charts.slice_chart(counter.name, "counter", span, values, refresh_seconds(precision))
    annotating.attach(chart, replies[-2])
    if compare is not None and before is not None:
        offset, text = compare
        previous = [
            value if start - offset >= oldest else None
            for start, value in zip(span.starts, before, strict=True)
        ]
        if any(value is not None for value in previous):
            chart.series.append(charts.Series(text, previous, compare=True))
        if None in previous:
            kept = label(counter.samples * precision)
            partly = "partly " if previous.count(None) < len(previous) else ""
            chart.notes.append(
                f"This precision keeps {counter.samples} slices ({kept}): {text} is {partly}"
                "beyond them."
            )
    chart.series += parts
    return chart, found


def counter_parts(
    counter: Counter,
    members: list[Any],
    params: QueryDict,
    span: charts.Span,
    compare: tuple[int, str] | None,
    own: list[int],
    own_before: list[int] | None,
) -> tuple[list[int], list[int] | None, list[charts.Series], CounterBreakdown]:
    """A labelled counter's series over ``span`` (and the compared period), grouped by the
    chosen label: the main line (the chosen series added up; the counter's own slices too
    without filters), its previous period's, the top values' lines and "others"."""
    n = len(span.starts)
    fields = span.starts + ([s - compare[0] for s in span.starts] if compare else [])
    found = breakdown.read(counter, members, params, span.step, fields)
    unfiltered = not found.choice.filters
    sums = {value: breakdown.summed(texts, len(fields)) for value, texts in found.groups.items()}
    rest = breakdown.summed(found.rest, len(fields))
    main = [
        sum(line[i] for line in sums.values()) + rest[i] + (own[i] if unfiltered else 0)
        for i in range(n)
    ]
    before = None
    if own_before is not None:
        before = [
            sum(line[n + i] for line in sums.values())
            + rest[n + i]
            + (own_before[i] if unfiltered else 0)
            for i in range(n)
        ]
    totals = {value: sum(line[:n]) for value, line in sums.items()}
    top = breakdown.top_values(totals)
    whole = sum(main)
    by = found.choice.by
    parts = [charts.Series(breakdown.line_label(by, v), sums[v][:n], part=True) for v in top]
    rows = [
        breakdown.Row(v, {"total": totals[v], "share": totals[v] / whole if whole else None})
        for v in totals
        if v in top
    ]
    others = None
    if len(sums) > len(top) or found.rest or (unfiltered and any(own)):
        rest_line = [main[i] - sum(sums[v][i] for v in top) for i in range(n)]
        parts.append(charts.Series(breakdown.OTHERS, rest_line, part=True))
        left = whole - sum(totals[v] for v in top)
        others = breakdown.Row(
            breakdown.OTHERS, {"total": left, "share": left / whole if whole else None}, others=True
        )
    return main, before, parts, CounterBreakdown(found, rows, others)


#: The breakdown table's columns: ``(sort key, heading)``.
COUNTER_COLUMNS = (("value", "Value"), ("total", "Total"), ("share", "Share"))


def counter_chart(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    counter = get_counter(name_param(request))
    precision = chosen_precision(request, counter)
    now = common.current_time()
    key = history.chosen(request.GET)
    if key is not None:
        chart, found = counter_history(counter, key, now), None
    else:
        chart, found = counter_reading(counter, precision, request.GET, now)
    urls = context["metrics_urls"]
    kept = charts.range_query(request.GET)
    query = {"name": counter.name, "precision": precision, **kept}
    extra = [] if found is None else found.found.choice.pairs()
    form = range_form(
        request,
        {"name": counter.name, "precision": precision},
        kept_since(counter, precision, now),
        now,
        precision,
    )
    form["hidden"] += extra
    context.update(
        data_url=breakdown.extended(with_query(urls["data"], **query), extra),
        export_urls={
            fmt: breakdown.extended(url, extra)
            for fmt, url in export.links(urls["data"], query).items()
        },
        precision_links=[
            (
                p,
                label(p),
                breakdown.extended(
                    with_query(urls["chart"], name=counter.name, precision=p, **kept), extra
                ),
            )
            for p in counter.precisions
        ],
        compare_links=[
            (value, text, breakdown.extended(url, extra))
            for value, text, url in compare_links(
                urls["chart"], query, request.GET.get("compare", "")
            )
        ],
        range_form=form,
        history_links=history.links(urls["chart"], {"name": counter.name}, key),
        history_range=key,
        title=f"Counter {counter.name}",
        metric_name=counter.name,
        counter=counter,
        precision=precision,
        precision_label=label(precision),
        chart=chart,
        payload=chart.payload(now),
    )
    if found is not None:
        context["breakdown"] = breakdown.table(
            request, found.found, found.rows, found.others, COUNTER_COLUMNS, "-total"
        )
    return TemplateResponse(request, "django_redis_metrics/admin/counter_chart.html", context)


def counter_data(request: HttpRequest) -> HttpResponse:
    """The chart's data as JSON (``format=json``, the default) or CSV (``format=csv``)."""
    counter = get_counter(name_param(request))
    precision = chosen_precision(request, counter)
    chart = counter_chart_data(counter, precision, request.GET, common.current_time())
    return export.respond(request, chart)


#: This kind's entry in the admin (its registry entry names it: ``Kind.admin``).
PAGES = KindPages(
    model=CounterMetric,
    index=counter_list,
    pages=(("chart/", counter_chart, "chart"),),
    endpoints=(("data/", counter_data, "data"),),
)
