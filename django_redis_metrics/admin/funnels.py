"""The admin's Funnels entry: the funnels declared in ``metrics.py``, and a page for each.

A funnel's page shows its conversion per step (users, % of the first step, % of the previous
one) in a chosen period (``?period=day|week|month`` holding ``?date=``, today by default), and
its conversion day by day over the last ``?days=`` days (a uPlot chart: the share of the first
step's users reaching each later step). A bitmap funnel costs one round trip for each (its days
in one pipeline); an ordered funnel reads the events of the period, then of the days, each read
bounded by ``FUNNEL_MAX_EVENTS``.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ..core.periods import Period, period_class
from ..funnels.declared import AnyFunnel, declared
from ..funnels.model import Funnel
from ..models import FunnelMetric
from . import common, export, labels
from .charts import Chart, Series
from .common import KindPages

#: The periods a funnel's table may cover.
PERIODS = ("day", "week", "month")
#: Days the chart shows by default, and at most.
DEFAULT_DAYS = 30
MAX_DAYS = 90


def get_funnel(request: HttpRequest) -> AnyFunnel:
    name = request.GET.get("name", "")
    found = declared().get(name)
    if found is None:
        raise Http404(f"No funnel named {name!r} is declared in a metrics.py.")
    return found


def funnel_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    """Every declared funnel, with its steps: no Redis read."""
    rows = [
        {"name": name, "kind": _kind(funnel), "steps": funnel.labels}
        for name, funnel in declared().items()
    ]
    context.update(title="Funnels", rows=rows)
    return TemplateResponse(request, "django_redis_metrics/admin/funnel_list.html", context)


def _kind(funnel: AnyFunnel) -> str:
    if isinstance(funnel, Funnel):
        return "unique-user bitmaps: a user is at a step when in it and in every step before"
    return (
        f"ordered, over the events of {funnel.series.name}: each step after the one before, "
        f"all within {common.label(int(funnel.within))} of the first"
    )


def step_rows(names: list[str], counts: list[int]) -> list[dict[str, Any]]:
    """Each step: its users, the % of the first step's and of the previous step's."""
    rows = []
    for index, (name, value) in enumerate(zip(names, counts, strict=True)):
        first, previous = counts[0], counts[index - 1] if index else counts[0]
        rows.append(
            {
                "step": name,
                "users": value,
                "of_first": _percent(value, first),
                "of_previous": _percent(value, previous),
            }
        )
    return rows


def _percent(part: int, whole: int) -> float | None:
    return round(100 * part / whole, 1) if whole else None


def chosen_period(request: HttpRequest, now: float) -> Period:
    """``?period=`` holding ``?date=`` (``2026-11-23``, in the site's zone), else today."""
    name = request.GET.get("period") or "day"
    if name not in PERIODS:
        raise Http404(f"period must be one of {', '.join(PERIODS)}.")
    zone = labels.site_zone()
    raw = request.GET.get("date")
    when = now
    if raw:
        try:
            day = date.fromisoformat(raw)
        except ValueError as exc:
            raise Http404("date must be a date such as 2026-11-23.") from exc
        when = datetime(day.year, day.month, day.day, 12, tzinfo=zone).timestamp()
    chosen = period_class(name).containing(when, zone)
    if chosen.start_ts > now:
        raise Http404("That period has not begun.")
    return chosen


def chosen_days(request: HttpRequest) -> int:
    raw = request.GET.get("days") or str(DEFAULT_DAYS)
    if not raw.isdigit() or not 1 <= int(raw) <= MAX_DAYS:
        raise Http404(f"days must be a number from 1 to {MAX_DAYS}.")
    return int(raw)


def period_counts(funnel: AnyFunnel, period: Period, now: float) -> list[int]:
    try:
        if isinstance(funnel, Funnel):
            return funnel.counts(period)
        return funnel.counts(period.start_ts, min(period.end_ts, now))
    except ValueError as exc:  # a step keeping no such period, too many events
        raise Http404(str(exc)) from exc


def over_time_chart(funnel: AnyFunnel, name: str, days: int, now: float) -> Chart:
    """Per day, the % of the first step's users reaching each later step (the first step's
    users alone for a one-step funnel), from the first day with users (empty leading days say
    nothing)."""
    try:
        over = funnel.over_time(days, now)
    except ValueError as exc:
        raise Http404(str(exc)) from exc
    first = next((i for i, (_, counts) in enumerate(over) if counts[0]), len(over) - 1)
    over = over[first:]
    names = funnel.labels
    if len(names) == 1:
        series = [Series(names[0], [counts[0] for _, counts in over])]
        integer, unit = True, ""
    else:
        series = [
            Series(f"{names[k]} (% of {names[0]})", [_percent(c[k], c[0]) for _, c in over])
            for k in range(1, len(names))
        ]
        integer, unit = False, "%"
    return Chart(
        name=name,
        kind="funnel",
        caption=f"{name}: conversion per day",
        x=[int(day.start_ts) for day, _ in over],
        labels=[labels.period_label(day) for day, _ in over],
        series=series,
        step=None,
        period="day",
        partial=True,
        zone=labels.site_zone(),
        integer=integer,
        unit=unit,
    )


def funnel_detail(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    funnel = get_funnel(request)
    name = str(funnel.name)
    now = common.current_time()
    period = chosen_period(request, now)
    days = chosen_days(request)
    # A funnel that cannot answer (a step keeping no days, an ordered funnel's range holding
    # more than FUNNEL_MAX_EVENTS events) says why on its page, the rest of the page shown.
    rows: list[dict[str, Any]] = []
    chart: Chart | None = None
    errors = {}
    try:
        rows = step_rows(funnel.labels, period_counts(funnel, period, now))
    except Http404 as exc:
        errors["table"] = str(exc)
    try:
        chart = over_time_chart(funnel, name, days, now)
    except Http404 as exc:
        errors["chart"] = str(exc)
    data_url = context["metrics_urls"]["data"]
    context.update(
        title=f"Funnel {name}",
        funnel=funnel,
        funnel_name=name,
        kind=_kind(funnel),
        period=period,
        period_label=_period_text(period),
        period_choices=PERIODS,
        chosen_date=period.start.date().isoformat(),
        days=days,
        rows=rows,
        chart=chart,
        payload=chart.payload(now) if chart is not None else None,
        errors=errors,
        export_urls=export.links(data_url, {"name": name, "days": days}),
        zone_label=labels.zone_label(now),
    )
    return TemplateResponse(request, "django_redis_metrics/admin/funnel_detail.html", context)


def _period_text(period: Period) -> str:
    """``on 2026-11-23``, ``in week 2026-W48``, ``in Nov 2026``."""
    shown = labels.period_label(period)
    return {"day": f"on {shown}", "week": f"in week {shown}"}.get(period.name, f"in {shown}")


def funnel_data(request: HttpRequest) -> HttpResponse:
    """The conversion chart as JSON (the default) or CSV (``format=csv``)."""
    funnel = get_funnel(request)
    chart = over_time_chart(funnel, str(funnel.name), chosen_days(request), common.current_time())
    return export.respond(request, chart)


#: The entry's pages (``options.py`` registers them under ``FunnelMetric``).
PAGES = KindPages(
    model=FunnelMetric,
    index=funnel_list,
    pages=(("detail/", funnel_detail, "detail"),),
    endpoints=(("data/", funnel_data, "data"),),
)
