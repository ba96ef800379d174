"""The admin's unique-user pages: the list, and a bitmap's periods and cohort table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from ..bitmaps import UniqueBitmap
from ..core import catalogue
from ..core.catalogue import validate_member
from ..core.connection import get_redis_connection
from ..core.drive import drive
from ..core.labels.labelling import split
from ..core.periods import Period, period_class
from ..core.steps import Op, pipe_steps
from ..models import UniqueBitmapMetric
from . import annotating, common, export, history, labels
from .charts import Chart, Series
from .common import KindPages, listing_page, name_param, with_query

#: How many of the newest periods the bitmap page shows, per kind of period.
PERIODS_SHOWN = {"hour": 48, "day": 30, "week": 12, "month": 12}
COHORT_PERIODS = 8
#: Most bitmaps the cohort table's "returning in" select offers (in name order).
RETURNING_CHOICES = 200


def get_bitmap(name: str) -> UniqueBitmap:
    try:
        return UniqueBitmap.objects.get(name)
    except LookupError as exc:
        raise Http404(str(exc)) from exc


def period_counts(
    bitmap: UniqueBitmap, now: float, kinds: Sequence[str] | None = None
) -> dict[str, list[tuple[Period, int]]]:
    """Distinct users of the newest periods of every kind the bitmap keeps (or of ``kinds``):
    one round trip."""
    return period_reading(bitmap, now, kinds, annotated=False)[0]


def period_reading(
    bitmap: UniqueBitmap, now: float, kinds: Sequence[str] | None = None, *, annotated: bool = True
) -> tuple[dict[str, list[tuple[Period, int]]], list[Any]]:
    """``period_counts``, and in the same round trip the annotations of those periods (for
    ``annotating.attach``; none read when not ``annotated``)."""
    ops: list[Op] = []
    shown: dict[str, list[Period]] = {}
    for name in kinds if kinds is not None else bitmap.periods:
        current = period_class(name).containing(now)
        periods = [current.shift(-i) for i in range(PERIODS_SHOWN[name] - 1, -1, -1)]
        shown[name] = periods
        for period in periods:
            ops.append(Op("bitcount", bitmap.key(period)))
    if annotated:
        ops.append(annotating.periods_read_op([p for ps in shown.values() for p in ps]))
    replies = iter(drive(pipe_steps(ops)))
    found = {name: [(p, int(next(replies))) for p in periods] for name, periods in shown.items()}
    return found, list(next(replies)) if annotated else []


def bitmap_list(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    """A page of bitmaps with today's, this week's and this month's uniques: two round trips."""
    page, query, count = listing_page(request, UniqueBitmap.objects.get_queryset())
    bitmaps = list(page.object_list)
    now = common.current_time()
    ops: list[Op] = []
    shown = []
    for bitmap in bitmaps:
        kinds = [p for p in ("day", "week", "month") if p in bitmap.periods]
        for kind in kinds:
            ops.append(Op("bitcount", bitmap.key(period_class(kind).containing(now))))
        shown.append((bitmap, kinds))
    replies = iter(drive(pipe_steps(ops)))
    rows = [
        {"bitmap": bitmap, "counts": {kind: int(next(replies)) for kind in kinds}}
        for bitmap, kinds in shown
    ]
    context.update(
        title="Unique users", rows=rows, page=page, query=query, count=count, noun="bitmap"
    )
    return TemplateResponse(request, "django_redis_metrics/admin/bitmap_list.html", context)


def period_chart(bitmap: UniqueBitmap, kind: str, values: list[tuple[Period, int]]) -> Chart:
    """Distinct users per calendar period, each point labelled as its period."""
    return Chart(
        name=bitmap.name,
        kind="uniques",
        caption=f"{bitmap.name}: distinct users per {kind}",
        x=[int(p.start_ts) for p, _ in values],
        labels=[labels.period_label(p) for p, _ in values],
        series=[Series(bitmap.name, [value for _, value in values])],
        step=None,
        period=kind,
        partial=True,
        zone=labels.site_zone(),
    )


#: The caption of a long range's chart (``history.set_charts``).
HISTORY_CAPTION = "{name}: distinct users per {period}"


def chosen_kind(request: HttpRequest, bitmap: UniqueBitmap) -> str:
    kind = request.GET.get("period", "")
    if kind not in bitmap.periods:
        raise Http404(f"period must be one of {', '.join(bitmap.periods)}.")
    return kind


def bitmap_data(request: HttpRequest) -> HttpResponse:
    """One period kind's chart as JSON (the default) or CSV (``format=csv``)."""
    bitmap = get_bitmap(name_param(request))
    kind = chosen_kind(request, bitmap)
    key = history.chosen(request.GET)
    if key is not None:
        now = common.current_time()
        found = history.set_charts(bitmap, "uniques", HISTORY_CAPTION, key, now, only=kind)
        return export.respond(request, found[kind])
    counts, notes = period_reading(bitmap, common.current_time(), [kind])
    return export.respond(
        request, annotating.attach(period_chart(bitmap, kind, counts[kind]), notes)
    )


def cohort_rows(
    bitmap: UniqueBitmap, kind: str, now: float, returning: UniqueBitmap | None = None
) -> list[dict[str, Any]]:
    """The retention table of the last ``COHORT_PERIODS`` periods (its later columns: the
    users found in ``returning``, if given), from the first period with users (empty leading
    periods say nothing). Every row has a cell per column, those of periods still to come
    ``(None, None)``, so the table is a square with a blank corner."""
    first = period_class(kind).containing(now).shift(-(COHORT_PERIODS - 1))
    rows: list[dict[str, Any]] = []
    table = bitmap.cohort(kind, first.start_ts, COHORT_PERIODS, returning=returning)
    for i, row in enumerate(table):
        size = row[0] if row else 0
        if not rows and not size:
            continue
        cells = [(value, round(100 * value / size) if size else None) for value in row[1:]]
        rows.append({"period": labels.period_label(first.shift(i)), "size": size, "cells": cells})
    for shown in rows:
        shown["cells"] += [(None, None)] * (len(rows) - 1 - len(shown["cells"]))
    return rows


def returning_choices(bitmap: UniqueBitmap) -> list[str]:
    """The bitmaps the cohort table may take its later columns from (this one aside): the
    first ``RETURNING_CHOICES`` metrics in name order, a labelled one once (read as a whole),
    the catalogue read page by page only as far as needed."""
    found: dict[str, None] = {}
    for member in catalogue.names(get_redis_connection(), UniqueBitmap.KIND):
        name = split(member).name
        if name != bitmap.name:
            found[name] = None
            if len(found) >= RETURNING_CHOICES:
                break
    return list(found)


def returning_bitmap(
    request: HttpRequest, bitmap: UniqueBitmap, period: str | None
) -> UniqueBitmap | None:
    """``?returning=``: the second bitmap of the cohort table (``None``: this one itself)."""
    name = request.GET.get("returning", "")
    if not name or name == bitmap.name:
        return None
    try:
        other = UniqueBitmap.objects.get(validate_member(name))
    except (LookupError, TypeError, ValueError) as exc:
        raise Http404(str(exc)) from exc
    if period is not None and period not in other.periods:
        raise Http404(f"{other.name!r} keeps no {period} keys: choose another period.")
    return other


def bitmap_detail(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    bitmap = get_bitmap(name_param(request))
    now = common.current_time()
    key = history.chosen(request.GET)
    if key is not None:
        found = history.set_charts(bitmap, "uniques", HISTORY_CAPTION, key, now)
    else:
        counts, notes = period_reading(bitmap, now)
        found = {
            kind: annotating.attach(period_chart(bitmap, kind, values), notes)
            for kind, values in counts.items()
        }
    data_url = context["metrics_urls"]["data"]
    kept = {"history": key} if key else {}
    shown = []
    for kind, chart in found.items():
        shown.append(
            {
                "period": kind,
                "id": f"uniques-{kind}",
                "rows": list(zip(reversed(chart.labels), reversed(chart.values), strict=True)),
                "chart": chart,
                "payload": chart.payload(now),
                "export_urls": export.links(
                    data_url, {"name": bitmap.name, "period": kind, **kept}
                ),
            }
        )
    choices = [p for p in ("day", "week", "month") if p in bitmap.periods]
    cohort_period = request.GET.get("cohort") or next(
        (p for p in ("week", "day", "month") if p in choices), None
    )
    if cohort_period is not None and cohort_period not in choices:
        raise Http404(f"cohort must be one of {', '.join(choices)}.")
    returning = returning_bitmap(request, bitmap, cohort_period)
    cohort = cohort_rows(bitmap, cohort_period, now, returning) if cohort_period is not None else []
    returning_kept = {"returning": returning.name} if returning is not None else {}
    context.update(
        title=f"Unique users {bitmap.name}",
        metric_name=bitmap.name,
        bitmap=bitmap,
        charts=shown,
        zone_label=labels.zone_label(now),
        cohort=cohort,
        cohort_period=cohort_period,
        cohort_offsets=list(range(1, len(cohort))),
        cohort_span=COHORT_PERIODS,
        cohort_links=[
            (
                p,
                with_query(
                    context["metrics_urls"]["detail"], name=bitmap.name, cohort=p, **returning_kept
                ),
            )
            for p in choices
        ],
        returning=returning,
        returning_choices=returning_choices(bitmap),
        history_links=history.links(
            context["metrics_urls"]["detail"], {"name": bitmap.name, **returning_kept}, key
        ),
        history_range=key,
    )
    return TemplateResponse(request, "django_redis_metrics/admin/bitmap_detail.html", context)


#: This kind's entry in the admin (its registry entry names it: ``Kind.admin``).
PAGES = KindPages(
    model=UniqueBitmapMetric,
    index=bitmap_list,
    pages=(("detail/", bitmap_detail, "detail"),),
    endpoints=(("data/", bitmap_data, "data"),),
)
