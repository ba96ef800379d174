"""The admin's statistic pages: the list (count, mean, p95 and max of the last hour), and a
chart per statistic: the mean per slice with its p50-p95 band."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ..conf import conf
from ..core.drive import drive
from ..core.steps import Op, pipe_steps
from ..core.timeutil import slice_starts
from ..models import StatisticMetric
from ..statistic import Statistic
from ..statistic.histogram import Summary, parse, parse_merged
from . import common, export
from .charts import Chart
from .common import KindPages, listing_page, name_param
from .counters import window_plan
from .sliced import band_chart, chart_context, chosen_precision, get_metric, read_span
from .tiles import name_pattern

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
    """Whether the middleware names this statistic (``VIEW_TIMER``): its values are ms."""
    template = conf.VIEW_TIMER
    return bool(template and name_pattern(template, view=".+")[1].match(name))


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
    span, texts = read_span(statistic, precision, request.GET, now)
    summaries = [parse(text) for text in texts]
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
    return chart, parse_merged(texts)


def statistic_chart(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    statistic = get_metric(Statistic, name_param(request))
    precision = chosen_precision(request, statistic)
    now = common.current_time()
    chart, whole = statistic_chart_data(statistic, precision, request, now)
    context.update(chart_context(request, context, statistic, precision, chart, now))
    context.update(
        title=f"Statistic {statistic.name}",
        whole=whole,
        whole_values=[whole[key] for key in ("mean", "stddev", "min", "p50", "p95", "p99", "max")],
    )
    return TemplateResponse(request, "django_redis_metrics/admin/statistic_chart.html", context)


def statistic_data(request: HttpRequest) -> HttpResponse:
    """The chart's data as JSON (``format=json``, the default) or CSV (``format=csv``)."""
    statistic = get_metric(Statistic, name_param(request))
    precision = chosen_precision(request, statistic)
    chart, _ = statistic_chart_data(statistic, precision, request, common.current_time())
    return export.respond(request, chart)


#: This kind's entry in the admin (its registry entry names it: ``Kind.admin``).
PAGES = KindPages(
    model=StatisticMetric,
    index=statistic_list,
    pages=(("chart/", statistic_chart, "chart"),),
    endpoints=(("data/", statistic_data, "data"),),
)
