"""What a chart shows, as one JSON payload: the admin pages, the dashboard, the CSV/JSON export
and the ``metric_chart`` template tag all build it here and ``charts.js`` draws it with uPlot.

The payload carries its own labels (made on the server, in the site's zone: see ``labels.py``),
the zone's name, and which point is the open slice, so the browser never decides a date.
Ranges come from the query string: ``start``/``end`` as the site's wall-clock time
(``2026-11-23T14:05``, what ``<input type="datetime-local">`` sends) and ``compare=day|week``
to overlay the same slices one day or one week earlier.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from typing import Any

from django.http import Http404, QueryDict

from . import labels
from .labels import chart_zone

#: ``?compare=`` choices: the offset of the overlaid previous period, and its legend label.
COMPARE = {"day": (86400, "the day before"), "week": (7 * 86400, "the week before")}
#: Most points one chart draws (a range asking for more must use a coarser slice).
MAX_CHART_POINTS = 2000


@dataclass
class Series:
    label: str
    values: Sequence[float | None]
    compare: bool = False
    #: ``"high"`` or ``"low"``: an edge of the band drawn behind the first series (a
    #: statistic's p50-p95, a gauge's min-max), else ``None``.
    band: str | None = None
    #: A part of the first series: a labelled metric's line for one label value, or "others".
    part: bool = False


@dataclass
class Chart:
    """One chart's data: ``x`` (slice or period starts, epoch seconds), a label per point, and
    one or more series of values aligned with ``x``."""

    name: str
    kind: str
    caption: str
    x: list[int]
    labels: list[str]
    series: list[Series]
    #: Seconds per slice (``None`` for calendar periods, whose lengths vary).
    step: int | None
    #: The calendar period of each point (``day``, ``week``, ...), else ``None``.
    period: str | None = None
    #: Whether the last point is the open slice (still counting).
    partial: bool = False
    #: Seconds between live refreshes; ``None``: a fixed range, not refreshed.
    refresh: int | None = None
    notes: list[str] = field(default_factory=list)
    zone: tzinfo | None = None
    #: Whether the values are counts (integer ticks from 0) rather than measures.
    integer: bool = True
    #: The unit of measured values (``"ms"``), shown beside them.
    unit: str = ""
    #: The annotations of the range (``annotating.py``): ``when``, ``text``, ``tags``, their
    #: ``label`` in the chart's zone and ``x``, where the chart draws them.
    annotations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def values(self) -> Sequence[float | None]:
        return self.series[0].values

    @property
    def total(self) -> float:
        return sum(value or 0 for value in self.values)

    def payload(self, now: float | None = None) -> dict[str, Any]:
        zone = self.zone or chart_zone(self.step)
        # The zone's offset now for a live chart (a month that began before a DST change is
        # still drawn in today's offset, as the page around it), else at the range's end.
        live = self.partial or not self.x
        when = (now if now is not None else time.time()) if live else self.x[-1]
        return {
            "name": self.name,
            "kind": self.kind,
            "caption": self.caption,
            "x": self.x,
            "labels": self.labels,
            "series": [
                {"label": s.label, "values": s.values, "compare": s.compare, "band": s.band}
                | ({"part": True} if s.part else {})
                for s in self.series
            ],
            "integer": self.integer,
            "unit": self.unit,
            "step": self.step,
            "utc_days": self.step is not None and labels.is_utc_days(self.step),
            "period": self.period,
            "partial": self.partial,
            "refresh": self.refresh,
            "tz": labels.zone_name(zone),
            "tz_label": labels.zone_label(when, zone),
            "notes": self.notes,
            "annotations": self.annotations,
            "total": self.total,
            "generated": now if now is not None else time.time(),
        }


@dataclass
class Span:
    """The slices a chart shows: ``count`` slices of ``step`` seconds from ``first``."""

    first: int
    count: int
    step: int
    #: Whether the last slice holds now (the chart is live and its last point partial).
    live: bool
    notes: list[str] = field(default_factory=list)

    @property
    def starts(self) -> list[int]:
        return [self.first + i * self.step for i in range(self.count)]

    @property
    def last(self) -> int:
        return self.first + (self.count - 1) * self.step


def parse_instant(raw: str, what: str, zone: tzinfo) -> float:
    """``2026-11-23T14:05`` (the site's wall-clock time) or ISO 8601 with an offset."""
    try:
        value = datetime.fromisoformat(raw)
    except ValueError as exc:
        raise Http404(f"{what} must be a date and time such as 2026-11-23T14:05.") from exc
    if value.tzinfo is None:
        value = value.replace(tzinfo=zone)
    return value.timestamp()


def chosen_span(
    params: QueryDict, step: int, now: float, oldest: float, default_count: int
) -> Span:
    """The slices ``?start=&end=`` ask for, clipped to what is kept (from ``oldest``) and to
    now; without them, the newest ``default_count`` slices."""
    zone = labels.site_zone()
    current = int(now // step) * step
    end = params.get("end")
    start = params.get("start")
    last = current
    if end:
        last = min(current, int(parse_instant(end, "end", zone) // step) * step)
    floor = int(-(-oldest // step)) * step  # the oldest slice wholly kept
    notes = []
    if start:
        first = int(parse_instant(start, "start", zone) // step) * step
        if first > last:
            raise Http404("start must be before end.")
    else:
        first = last - (default_count - 1) * step
    if first < floor:
        if start:
            notes.append(
                f"Data before {labels.instant_label(floor, step)} is no longer kept "
                f"at this precision: the chart starts there."
            )
        first = floor
    if last < first:
        raise Http404("That range is older than what is kept at this precision.")
    count = (last - first) // step + 1
    if count > MAX_CHART_POINTS:
        raise Http404(
            f"That range holds {count} slices; at most {MAX_CHART_POINTS} are drawn: "
            "choose a coarser precision or window."
        )
    return Span(first, count, step, live=last == current, notes=notes)


def chosen_points(params: QueryDict, default: int) -> int:
    """``?points=``: how many of the newest slices a live chart shows (the dashboard's chart
    of the last hour refreshes with the hour it was drawn with), else ``default``."""
    raw = params.get("points")
    if raw is None:
        return default
    if not (
        raw.isascii() and raw.isdigit() and len(raw) <= 4 and 1 <= int(raw) <= MAX_CHART_POINTS
    ):
        raise Http404(f"points must be a whole number from 1 to {MAX_CHART_POINTS}.")
    return int(raw)


def chosen_compare(params: QueryDict) -> tuple[int, str] | None:
    raw = params.get("compare") or ""
    if not raw:
        return None
    if raw not in COMPARE:
        raise Http404(f"compare must be one of {', '.join(COMPARE)}.")
    return COMPARE[raw]


def slice_chart(
    name: str, kind: str, span: Span, values: Sequence[float | None], refresh: int | None
) -> Chart:
    """A chart of ``span``'s slices (counters and event windows), labelled in its zone."""
    zone = chart_zone(span.step)
    return Chart(
        name=name,
        kind=kind,
        caption=labels.caption(name, span.step),
        x=span.starts,
        labels=[labels.instant_label(start, span.step, zone) for start in span.starts],
        series=[Series(name, list(values))],
        step=span.step,
        partial=span.live,
        refresh=refresh if span.live else None,
        notes=list(span.notes),
        zone=zone,
    )


def lines_chart(
    name: str,
    kind: str,
    span: Span,
    lines: Sequence[tuple[str, Sequence[float | None], str | None]],
    *,
    refresh: int | None,
    integer: bool,
    unit: str = "",
) -> Chart:
    """A chart of ``lines`` (``(label, values, band edge)``, the first the main line) over
    ``span``'s slices, in the site's zone (UTC for whole-day slices)."""
    zone = chart_zone(span.step)
    return Chart(
        name=name,
        kind=kind,
        caption=f"{name}, {lines[0][0]} {labels.rate(span.step)}",
        x=span.starts,
        labels=[labels.instant_label(start, span.step, zone) for start in span.starts],
        series=[Series(text, list(values), band=band) for text, values, band in lines],
        step=span.step,
        partial=span.live,
        refresh=refresh,
        notes=list(span.notes),
        zone=zone,
        integer=integer,
        unit=unit,
    )


def range_query(params: QueryDict) -> dict[str, str]:
    """The range, comparison and history parameters of a page, to carry into its links."""
    return {
        key: str(params.get(key))
        for key in ("start", "end", "compare", "history")
        if params.get(key)
    }


def input_value(when: float) -> str:
    """``when`` as the range inputs show it (ISO 8601, to the minute), in the site's zone."""
    return datetime.fromtimestamp(when, labels.site_zone()).strftime("%Y-%m-%dT%H:%M")
