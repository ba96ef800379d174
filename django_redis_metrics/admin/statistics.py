"""The admin's statistic pages: the list (count, mean, p95 and max of the last hour), and a
chart per statistic: the mean per slice with its p50-p95 band."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ..conf import conf
from ..core.drive import drive
from ..core.labels.labelling import split
from ..core.steps import Op, pipe_steps
from ..core.timeutil import slice_starts
from ..models import StatisticMetric
from ..statistic import Statistic
from ..statistic.histogram import Slice, Summary, empty, merge, parse, parse_merged, summarize
from . import annotating, breakdown, common, export, history
from .charts import Chart, Series, Span
from .common import KindPages, listing_page, name_param
from .counters import window_plan
from .sliced import band_chart, chart_context, chosen_precision, get_metric, read_span
from .viewsource import LEGACY_TIMER, name_pattern

#: The list's window: the slices covering the last hour, merged (see ``window_plan``).
LIST_WINDOW = 3600
#: The legend of a statistic chart's lines: the main line, then the band's low and high edges.
MEAN, BAND_LOW, BAND_HIGH = "mean", "p50 (band's low edge)", "p95 (band's high edge)"


def window_summaries(statistics: Sequence[Statistic], seconds: int, now: float) -> list[Any]:
    """Each statistic's slices covering the last ``seconds`` merged into one summary (``None``
    where no precision covers them): one round trip."""
    ops: list[Op] = []
    plans = [window_plan(statistic, seconds) for statistic in statistics]
    for statistic, plan in zip(statistics, plans, strict=True):
        if plan is not None:
            ops.append(Op("hmget", statistic.key(plan[0]), slice_starts(*plan, now)))
    replies = iter(drive(pipe_steps(ops)))
    return [None if plan is None else parse_merged(next(replies)) for plan in plans]


def is_view_timer(name: str) -> bool:
    """Whether the middleware writes this statistic, so its values are ms: the labelled
    ``LATENCY_STATISTIC`` or one of its series, or a per-view statistic named as before labels
    (``VIEW_TIMER``, or its old default ``latency:{view}``)."""
    if conf.LATENCY_STATISTIC is not None and split(name).name == conf.LATENCY_STATISTIC:
        return True
    templates = {template for template in (conf.VIEW_TIMER, LEGACY_TIMER) if template}
    return any(name_pattern(template, view=".+")[1].match(name) for template in templates)


def statistic_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    page, query, count = listing_page(request, Statistic.objects.get_queryset())
    statistics = list(page.object_list)
    now = common.current_time()
    summaries = window_summaries(statistics, LIST_WINDOW, now)
    context.update(
        title="Statistics",
        rows=[
            {"statistic": statistic, "summary": summary}
            for statistic, summary in zip(statistics, summaries, strict=True)
        ],
        page=page,
        query=query,
        count=count,
        noun="statistic",
    )
    return TemplateResponse(request, "django_redis_metrics/admin/statistic_list.html", context)


def statistic_chart_data(
    statistic: Statistic, precision: int, request: HttpRequest, now: float
) -> tuple[Chart, Summary]:
    """The chart of the chosen range, and the summary of that whole range merged."""
    chart, whole, _ = statistic_reading(statistic, precision, request, now)
    return chart, whole


def statistic_history(statistic: Statistic, key: str, now: float) -> Chart:
    """A year, five years or all of ``statistic`` by day: each day's mean, with its p50-p95
    band, from Redis' days and the archive's (``Statistic.history``)."""
    precision = history.daily_precision(statistic)
    oldest = history.oldest_archived(statistic.KIND, statistic.name)
    span = history.day_span(key, now, oldest, additive=False)
    found = history.placed(
        statistic.history(precision, span.first, span.last + span.step - 1), span
    )
    summaries = [s if s and s.get("count") else None for s in found]
    return history.history_chart(
        statistic.name,
        "statistic",
        span,
        [
            (MEAN, [None if s is None else s["mean"] for s in summaries], None),
            (BAND_LOW, [None if s is None else s["p50"] for s in summaries], "low"),
            (BAND_HIGH, [None if s is None else s["p95"] for s in summaries], "high"),
        ],
        integer=False,
        unit="ms" if is_view_timer(statistic.name) else "",
    )


def statistic_reading(
    statistic: Statistic, precision: int, request: HttpRequest, now: float
) -> tuple[Chart, Summary, StatisticBreakdown | None]:
    """The chart, the whole range's summary, and for a labelled statistic its breakdown."""
    span, texts, members, notes = read_span(statistic, precision, request.GET, now)
    found = None
    if members:
        slices, parts, found = statistic_parts(statistic, members, request, span, texts)
        summaries = [empty() if s is None else summarize(s) for s in slices]
        merged = _merged(slices)
        whole = empty() if merged is None else summarize(merged)
    else:
        parts = []
        summaries = [parse(text) for text in texts]
        whole = parse_merged(texts)
    chart = band_chart(
        statistic,
        "statistic",
        span,
        [
            (MEAN, [s["mean"] for s in summaries], None),
            (BAND_LOW, [s["p50"] for s in summaries], "low"),
            (BAND_HIGH, [s["p95"] for s in summaries], "high"),
        ],
        unit="ms" if is_view_timer(statistic.name) else "",
    )
    annotating.attach(chart, notes)
    chart.series += parts
    return chart, whole, found


@dataclass
class StatisticBreakdown:
    """A labelled statistic's series read for its page: what its table shows."""

    found: breakdown.Found
    rows: list[breakdown.Row]
    others: breakdown.Row | None


#: The breakdown table's columns: ``(sort key, heading)``.
STATISTIC_COLUMNS = (
    ("value", "Value"),
    ("count", "Count"),
    ("share", "Share"),
    ("mean", "Mean"),
    ("p95", "p95"),
)


def statistic_parts(
    statistic: Statistic, members: list[Any], request: HttpRequest, span: Span, own: list[Any]
) -> tuple[list[Slice | None], list[Series], StatisticBreakdown]:
    """A labelled statistic's series over ``span`` grouped by the chosen label: each slice of
    the chosen series merged (the statistic's own slices too without filters), the top values'
    mean lines and "others", and the table's rows (count, share, mean, p95 over the range)."""
    n = len(span.starts)
    found = breakdown.read(
        statistic, members, request.GET, span.step, span.starts, breakdown.MAX_READ_STATISTIC
    )
    rest = [*found.rest, *([] if found.choice.filters else [own])]
    groups = {value: _merged_slices(texts, n) for value, texts in found.groups.items()}
    wholes = {value: _merged(slices) for value, slices in groups.items()}
    counts = {value: whole.count if whole else 0 for value, whole in wholes.items()}
    top = breakdown.top_values(counts)
    left = [groups[v] for v in groups if v not in top] + [_merged_slices(rest, n)]
    beyond = [_merged(s[i] for s in left) for i in range(n)]
    main = [_merged([*(groups[v][i] for v in top), beyond[i]]) for i in range(n)]
    total = sum(s.count for s in main if s)
    by = found.choice.by
    parts = [
        Series(breakdown.line_label(by, v), [_mean(s) for s in groups[v]], part=True) for v in top
    ]
    rows = [breakdown.Row(v, _figures(wholes[v], total)) for v in groups if v in top]
    others = None
    if len(groups) > len(top) or any(beyond):
        parts.append(Series(breakdown.OTHERS, [_mean(s) for s in beyond], part=True))
        rest_whole = _merged(beyond)
        others = breakdown.Row(breakdown.OTHERS, _figures(rest_whole, total), others=True)
    return main, parts, StatisticBreakdown(found, rows, others)


def _merged_slices(texts: list[list[Any]], n: int) -> list[Slice | None]:
    """Per slice, several series' stored slices merged (``None``: none holds a value)."""
    parsed = [[None if t is None else Slice.from_text(t) for t in series] for series in texts]
    return [_merged(series[i] for series in parsed) for i in range(n)]


def _merged(slices: Iterable[Slice | None]) -> Slice | None:
    return merge(s for s in slices if s is not None)


def _mean(found: Slice | None) -> float | None:
    return None if found is None else found.total / found.count


def _figures(found: Slice | None, total: int) -> dict[str, float | None]:
    summary = empty() if found is None else summarize(found)
    return {
        "count": summary["count"],
        "share": summary["count"] / total if total else None,
        "mean": summary["mean"],
        "p95": summary["p95"],
    }


def statistic_chart(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    statistic = get_metric(Statistic, name_param(request))
    precision = chosen_precision(request, statistic)
    now = common.current_time()
    key = history.chosen(request.GET)
    if key is not None:
        chart, whole, found = statistic_history(statistic, key, now), empty(), None
    else:
        chart, whole, found = statistic_reading(statistic, precision, request, now)
    extra = [] if found is None else found.found.choice.pairs()
    context.update(chart_context(request, context, statistic, precision, chart, now, extra))
    context.update(
        title=f"Statistic {statistic.name}",
        whole=whole,
        whole_values=[whole[key] for key in ("mean", "stddev", "min", "p50", "p95", "p99", "max")],
    )
    if found is not None:
        context["breakdown"] = breakdown.table(
            request, found.found, found.rows, found.others, STATISTIC_COLUMNS, "-count"
        )
    return TemplateResponse(request, "django_redis_metrics/admin/statistic_chart.html", context)


def statistic_data(request: HttpRequest) -> HttpResponse:
    """The chart's data as JSON (``format=json``, the default) or CSV (``format=csv``)."""
    statistic = get_metric(Statistic, name_param(request))
    precision = chosen_precision(request, statistic)
    now = common.current_time()
    key = history.chosen(request.GET)
    if key is not None:
        return export.respond(request, statistic_history(statistic, key, now))
    chart, _ = statistic_chart_data(statistic, precision, request, now)
    return export.respond(request, chart)


#: This kind's entry in the admin (its registry entry names it: ``Kind.admin``).
PAGES = KindPages(
    model=StatisticMetric,
    index=statistic_list,
    pages=(("chart/", statistic_chart, "chart"),),
    endpoints=(("data/", statistic_data, "data"),),
)
