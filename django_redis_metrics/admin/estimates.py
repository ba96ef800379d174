"""The admin's unique-estimate pages: the list (today, this week, this month) and, per
estimate, its approximate distinct counts per period over time (HyperLogLog, ~0.81 % error)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ..core.drive import drive
from ..core.periods import Period, period_class
from ..core.steps import Op, pipe_steps
from ..estimates import UniqueEstimate
from ..models import UniqueEstimateMetric
from . import annotating, common, export, history, labels
from .bitmaps import PERIODS_SHOWN
from .charts import Chart, Series
from .common import KindPages, listing_page, name_param

#: The list's columns: the current period of each kind, when the estimate keeps it.
LIST_PERIODS = ("day", "week", "month")


def pfcount(key: str) -> Op:
    """``PFCOUNT key`` through ``execute_command``, as redis-py's cluster pipeline refuses its
    ``pfcount()`` method (a one-key count is routed like any other command)."""
    return Op("execute_command", "PFCOUNT", key)


def get_estimate(name: str) -> UniqueEstimate:
    try:
        return UniqueEstimate.objects.get(name)
    except LookupError as exc:
        raise Http404(str(exc)) from exc


def period_counts(
    estimate: UniqueEstimate, now: float, kinds: Sequence[str] | None = None
) -> dict[str, list[tuple[Period, int]]]:
    """Estimated distinct items of the newest periods of every kind the estimate keeps (or of
    ``kinds``): one pipelined round trip of ``PFCOUNT``\\ s (a period no longer kept counts 0)."""
    return period_reading(estimate, now, kinds, annotated=False)[0]


def period_reading(
    estimate: UniqueEstimate,
    now: float,
    kinds: Sequence[str] | None = None,
    *,
    annotated: bool = True,
) -> tuple[dict[str, list[tuple[Period, int]]], list[Any]]:
    """``period_counts``, and in the same round trip the annotations of those periods (for
    ``annotating.attach``; none read when not ``annotated``)."""
    ops: list[Op] = []
    shown: dict[str, list[Period]] = {}
    for name in kinds if kinds is not None else estimate.periods:
        current = period_class(name).containing(now)
        shown[name] = [current.shift(-i) for i in range(PERIODS_SHOWN[name] - 1, -1, -1)]
        for period in shown[name]:
            ops.append(pfcount(estimate.key(period)))
    if annotated:
        ops.append(annotating.periods_read_op([p for ps in shown.values() for p in ps]))
    replies = iter(drive(pipe_steps(ops)))
    found = {name: [(p, int(next(replies))) for p in periods] for name, periods in shown.items()}
    return found, list(next(replies)) if annotated else []


def estimate_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    """A page of estimates with today's, this week's and this month's counts: two round trips
    (configuration, counts)."""
    page, query, count = listing_page(request, UniqueEstimate.objects.get_queryset())
    estimates = list(page.object_list)
    now = common.current_time()
    ops: list[Op] = []
    shown = []
    for estimate in estimates:
        kinds = [p for p in LIST_PERIODS if p in estimate.periods]
        for kind in kinds:
            ops.append(pfcount(estimate.key(period_class(kind).containing(now))))
        shown.append((estimate, kinds))
    replies = iter(drive(pipe_steps(ops)))
    rows = [
        {"estimate": estimate, "counts": {kind: int(next(replies)) for kind in kinds}}
        for estimate, kinds in shown
    ]
    context.update(
        title="Unique estimates",
        rows=rows,
        page=page,
        query=query,
        count=count,
        noun="estimate",
        zone_label=labels.zone_label(now),
    )
    return TemplateResponse(request, "django_redis_metrics/admin/estimate_list.html", context)


def period_chart(estimate: UniqueEstimate, kind: str, values: list[tuple[Period, int]]) -> Chart:
    """Estimated distinct items per calendar period, each point labelled as its period."""
    return Chart(
        name=estimate.name,
        kind="estimate",
        caption=f"{estimate.name}: distinct items per {kind} (estimated)",
        x=[int(p.start_ts) for p, _ in values],
        labels=[labels.period_label(p) for p, _ in values],
        series=[Series(estimate.name, [value for _, value in values])],
        step=None,
        period=kind,
        partial=True,
        zone=labels.site_zone(),
    )


#: The caption of a long range's chart (``history.set_charts``).
HISTORY_CAPTION = "{name}: distinct items per {period} (estimated)"


def chosen_kind(request: HttpRequest, estimate: UniqueEstimate) -> str:
    kind = request.GET.get("period", "")
    if kind not in estimate.periods:
        raise Http404(f"period must be one of {', '.join(estimate.periods)}.")
    return kind


def estimate_data(request: HttpRequest) -> HttpResponse:
    """One period kind's chart as JSON (the default) or CSV (``format=csv``)."""
    estimate = get_estimate(name_param(request))
    kind = chosen_kind(request, estimate)
    key = history.chosen(request.GET)
    if key is not None:
        now = common.current_time()
        found = history.set_charts(estimate, "estimate", HISTORY_CAPTION, key, now, only=kind)
        return export.respond(request, found[kind])
    counts, notes = period_reading(estimate, common.current_time(), [kind])
    return export.respond(
        request, annotating.attach(period_chart(estimate, kind, counts[kind]), notes)
    )


def estimate_detail(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    estimate = get_estimate(name_param(request))
    now = common.current_time()
    data_url = context["metrics_urls"]["data"]
    shown = []
    key = history.chosen(request.GET)
    if key is not None:
        found = history.set_charts(estimate, "estimate", HISTORY_CAPTION, key, now)
    else:
        counts, notes = period_reading(estimate, now)
        found = {
            kind: annotating.attach(period_chart(estimate, kind, values), notes)
            for kind, values in counts.items()
        }
    kept = {"history": key} if key else {}
    for kind, chart in found.items():
        shown.append(
            {
                "period": kind,
                "id": f"estimate-{kind}",
                "rows": list(zip(reversed(chart.labels), reversed(chart.values), strict=True)),
                "payload": chart.payload(now),
                "export_urls": export.links(
                    data_url, {"name": estimate.name, "period": kind, **kept}
                ),
            }
        )
    context.update(
        title=f"Unique estimate {estimate.name}",
        metric_name=estimate.name,
        estimate=estimate,
        charts=shown,
        zone_label=labels.zone_label(now),
        history_links=history.links(
            context["metrics_urls"]["detail"], {"name": estimate.name}, key
        ),
        history_range=key,
    )
    return TemplateResponse(request, "django_redis_metrics/admin/estimate_detail.html", context)


#: This kind's entry in the admin (its registry entry names it: ``Kind.admin``).
PAGES = KindPages(
    model=UniqueEstimateMetric,
    index=estimate_list,
    pages=(("detail/", estimate_detail, "detail"),),
    endpoints=(("data/", estimate_data, "data"),),
)
