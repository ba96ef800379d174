"""Long ranges on every chart: a year, five years, or all the history the archive keeps.

``?history=year|5y|all`` turns a chart page (and its CSV/JSON export) into a chart of whole
days read through the models' ``history()``: the days Redis still holds come from Redis, older
ones from the archive in the Django database (``archive/``), drawn as one line. The metric is
shown whole (a labelled metric's series added, merged or grouped as its own reads do).

Additive figures (counts) past :data:`charts.MAX_CHART_POINTS` days are drawn by week (epoch
weeks of seven UTC days, summed); measures (a statistic's mean, a gauge's last value) cannot be
summed, so their "all" shows the newest days that fit, and says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from django.db.models import Min
from django.http import Http404, QueryDict

from ..archive.missing import archive_tables
from ..archive.models import ArchivedPeriod, ArchivedSlice
from ..conf import conf
from ..core.drive import drive
from ..core.periods import Period, period_class
from ..core.steps import pipe_steps
from ..core.timeutil import slice_start
from . import annotating, charts, labels
from .charts import Chart, Series, Span
from .common import with_query

DAY = 86400
WEEK = 7 * DAY
#: ``?history=`` choices: their link text and how many days they reach back (``None``: all).
RANGES: Mapping[str, tuple[str, int | None]] = {
    "year": ("a year", 366),
    "5y": ("5 years", 5 * 365 + 2),
    "all": ("all", None),
}


def chosen(params: QueryDict) -> str | None:
    """The ``?history=`` range asked for, else ``None`` (the page's recent slices)."""
    raw = params.get("history") or ""
    if not raw:
        return None
    if raw not in RANGES:
        raise Http404(f"history must be one of {', '.join(RANGES)}.")
    return raw


def links(
    chart_url: str, query: Mapping[str, Any], current: str | None
) -> list[tuple[str, str, str]]:
    """``(value, text, url)`` of each range, the recent slices first, keeping ``query``."""
    base = {key: value for key, value in query.items() if key not in ("history", "start", "end")}
    choices = [("", "recent"), *((key, text) for key, (text, _) in RANGES.items())]
    return [
        (key, text, with_query(chart_url, **base, **({"history": key} if key else {})))
        for key, text in choices
    ]


def oldest_archived(kind: str, metric: str, table: str = "slice") -> int | None:
    """The start of the oldest archived slice (or period) of ``metric``, else ``None``."""
    model = ArchivedSlice if table == "slice" else ArchivedPeriod
    with archive_tables(conf.ARCHIVE_DATABASE):
        found = (
            model.objects.using(conf.ARCHIVE_DATABASE)
            .filter(kind=kind, metric=metric)
            .aggregate(oldest=Min("start"))["oldest"]
        )
    return None if found is None else int(found)


def day_span(key: str, now: float, oldest: int | None, additive: bool) -> Span:
    """The days (or, for a long additive "all", the weeks) of range ``key`` up to today."""
    today = slice_start(now, DAY)
    reach = RANGES[key][1]
    if reach is not None:
        first = today - (reach - 1) * DAY
    else:  # an archive from 1970 on starts at 0: the oldest row, not "none"; an hour's row
        first = today if oldest is None else slice_start(min(oldest, today), DAY)  # its day
    count = (today - first) // DAY + 1
    if count <= charts.MAX_CHART_POINTS:
        return Span(first, count, DAY, live=True)
    if additive:
        first, last = first // WEEK * WEEK, today // WEEK * WEEK
        weeks = (last - first) // WEEK + 1
        if weeks <= charts.MAX_CHART_POINTS:
            return Span(first, weeks, WEEK, live=True)
        note = (
            f"The archive reaches back {weeks:,} weeks; the chart shows the newest "
            f"{charts.MAX_CHART_POINTS:,} (the CSV and JSON exports too)."
        )
        first = last - (charts.MAX_CHART_POINTS - 1) * WEEK
        return Span(first, charts.MAX_CHART_POINTS, WEEK, live=True, notes=[note])
    first = today - (charts.MAX_CHART_POINTS - 1) * DAY
    note = (
        f"The archive reaches back {count:,} days; the chart shows the newest "
        f"{charts.MAX_CHART_POINTS:,} (the CSV and JSON exports too)."
    )
    return Span(first, charts.MAX_CHART_POINTS, DAY, live=True, notes=[note])


def summed(points: Iterable[tuple[int, float | None]], span: Span) -> list[float]:
    """``(day start, value)`` points added into ``span``'s slices (days or weeks); counts
    stay whole numbers."""
    values: list[float] = [0] * span.count
    for start, value in points:
        index = (int(start) - span.first) // span.step
        if 0 <= index < span.count and value is not None:
            values[index] += value
    return values


def placed(points: Iterable[tuple[int, Any]], span: Span) -> list[Any]:
    """``(day start, value)`` points at their day of ``span`` (``None`` where none is)."""
    values: list[Any] = [None] * span.count
    for start, value in points:
        index = (int(start) - span.first) // span.step
        if 0 <= index < span.count:
            values[index] = value
    return values


def history_chart(
    name: str,
    kind: str,
    span: Span,
    lines: Sequence[tuple[str, Sequence[float | None], str | None]],
    *,
    integer: bool,
    unit: str = "",
) -> Chart:
    """A chart of ``lines`` (``(label, values, band edge)``) over ``span``'s days or weeks,
    with the range's annotations; not refreshed live (its last day is still counting)."""
    chart = charts.lines_chart(name, kind, span, lines, refresh=None, integer=integer, unit=unit)
    (found,) = drive(pipe_steps([annotating.read_op(span)]))
    return annotating.attach(chart, found)


def counts_chart(
    name: str,
    kind: str,
    key: str,
    now: float,
    oldest: int | None,
    read: Callable[[int, int], Iterable[tuple[int, float | None]]],
    line: str = "count",
) -> Chart:
    """The history chart of an additive figure: ``read(start, end)`` gives its
    ``(day start, count)`` points, drawn by day or summed by week."""
    span = day_span(key, now, oldest, additive=True)
    end = span.last + span.step - 1
    values = summed(read(span.first, end), span)
    return history_chart(name, kind, span, [(line, values, None)], integer=True)


def daily_precision(metric: Any) -> int:
    """A day: the precision history charts read (refused, clearly, for a metric without it)."""
    if DAY not in metric.precisions:
        raise Http404(
            f"{metric.LABEL.capitalize()} {metric.name!r} keeps no daily slices "
            f"(precisions {', '.join(map(str, metric.precisions))}): its long ranges are drawn "
            "from daily slices."
        )
    return DAY


#: The calendar periods a long range of a set (unique users, estimates) is drawn in: those the
#: archive keeps. Distinct counts cannot be added up, so each point is one period.
ARCHIVED_PERIODS = ("day", "week", "month")


def set_periods(metric: Any) -> list[str]:
    """The periods a long range of ``metric`` is drawn in: those it keeps that are archived."""
    return [p for p in ARCHIVED_PERIODS if p in metric.periods]


def set_charts(
    metric: Any, kind: str, caption: str, key: str, now: float, only: str | None = None
) -> dict[str, Chart]:
    """A set's (a unique bitmap's, an estimate's) long-range chart per period it keeps that is
    archived (or of period ``only``, a 404 if it is not one): the periods Redis keeps from
    Redis, older ones from the archive (``metric.history()``). ``caption`` is formatted with
    the metric's ``name`` and the ``period``."""
    periods = set_periods(metric)
    if only is not None:
        if only not in periods:
            raise Http404("Long ranges are drawn by day, week or month.")
        periods = [only]
    return {
        period: periods_chart(
            metric,
            kind,
            period,
            key,
            now,
            partial(metric.history, period),
            caption.format(name=metric.name, period=period),
        )
        for period in periods
    }


def periods_of(
    kind: str, key: str, now: float, oldest: int | None
) -> tuple[list[Period], list[str]]:
    """The ``kind`` periods (``day``, ``week``, ``month``) of range ``key`` up to the current
    one, oldest first: at most :data:`charts.MAX_CHART_POINTS` (the newest), with a note when
    the range held more."""
    current = period_class(kind).containing(now)
    reach = RANGES[key][1]
    if reach is not None:
        since = now - (reach - 1) * DAY
    else:
        since = min(oldest, now) if oldest is not None else now
    first = period_class(kind).containing(since)
    periods: list[Period] = []
    period = current
    while period.start_ts >= first.start_ts and len(periods) < charts.MAX_CHART_POINTS:
        periods.append(period)
        period = period.shift(-1)
    notes = []
    if period.start_ts >= first.start_ts:
        notes.append(
            f"The range holds more than {charts.MAX_CHART_POINTS:,} {kind}s; the chart shows "
            "the newest."
        )
    return periods[::-1], notes


def period_history_chart(
    name: str,
    kind: str,
    period: str,
    periods: Sequence[Period],
    points: Iterable[tuple[int, int]],
    notes: Sequence[str],
    caption: str,
) -> Chart:
    """Distinct counts per ``period`` over ``periods`` (``points``: ``(period start,
    count)``), each point labelled as its period, with the periods' annotations."""
    by_start = {int(start): count for start, count in points}
    chart = Chart(
        name=name,
        kind=kind,
        caption=caption,
        x=[int(p.start_ts) for p in periods],
        labels=[labels.period_label(p) for p in periods],
        series=[Series(name, [by_start.get(int(p.start_ts), 0) for p in periods])],
        step=None,
        period=period,
        partial=True,
        notes=list(notes),
        zone=labels.site_zone(),
    )
    (found,) = drive(pipe_steps([annotating.periods_read_op(list(periods))]))
    return annotating.attach(chart, found)


def periods_chart(
    metric: Any,
    kind: str,
    period: str,
    key: str,
    now: float,
    read: Callable[[float, float], Iterable[tuple[int, int]]],
    caption: str,
) -> Chart:
    """A count per ``period`` of ``metric`` over range ``key``: ``read(start, end)`` gives
    ``(period start, count)`` from Redis for the periods it keeps, from the archive before."""
    oldest = oldest_archived(metric.KIND, metric.name, table="period")
    periods, notes = periods_of(period, key, now, oldest)
    points = read(periods[0].start_ts, now)
    return period_history_chart(metric.name, kind, period, periods, points, notes, caption)
