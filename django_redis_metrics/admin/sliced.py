"""What the Statistic and Gauge pages share: finding the metric, its chosen precision and
range, and a chart of a line with a band behind it (mean with p50-p95, last with min-max)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar

from django.http import Http404, HttpRequest, QueryDict

from ..core.drive import drive
from ..core.sliced import SlicedMetric
from ..core.steps import Op, pipe_steps
from ..core.timeutil import slice_start
from . import annotating, breakdown, charts, export, history
from .charts import Chart, Span
from .common import label, refresh_seconds, with_query
from .controls import range_form

M = TypeVar("M", bound=SlicedMetric)
#: Points drawn by default (fewer if the metric keeps fewer slices).
CHART_POINTS = 120


def get_metric(model: type[M], name: str) -> M:
    """The metric ``name`` (a labelled one too, found by its series), else ``Http404``."""
    return breakdown.find(model, name)


def default_precision(metric: SlicedMetric) -> int:
    """The finest precision of at least a minute (else the coarsest one)."""
    coarse = [p for p in metric.precisions if p >= 60]
    return min(coarse) if coarse else max(metric.precisions)


def chosen_precision(request: HttpRequest, metric: SlicedMetric) -> int:
    raw = request.GET.get("precision")
    if raw is None:
        return default_precision(metric)
    try:
        precision = int(raw)
    except ValueError as exc:
        raise Http404("precision must be a number of seconds.") from exc
    if precision not in metric.precisions:
        raise Http404(f"{metric.LABEL.capitalize()} {metric.name!r} has no precision {precision}.")
    return precision


def kept_since(metric: SlicedMetric, precision: int, now: float) -> int:
    """The start of the oldest slice of ``precision`` the metric keeps."""
    return slice_start(now, precision) - (metric.samples - 1) * precision


def read_span(
    metric: SlicedMetric, precision: int, params: QueryDict, now: float
) -> tuple[Span, list[Any], list[Any], list[Any]]:
    """The slices of the chosen range (``?start=&end=``, else the newest), their stored texts
    (``None`` for an empty slice), the metric's series (none for a plain metric; see
    ``breakdown.py``) and the range's annotations (for ``annotating.attach``): one round
    trip."""
    oldest = kept_since(metric, precision, now)
    span = charts.chosen_span(params, precision, now, oldest, min(CHART_POINTS, metric.samples))
    texts, members, notes = drive(
        pipe_steps(
            [
                Op("hmget", metric.key(precision), span.starts),
                breakdown.listing_op(metric),
                annotating.read_op(span),
            ]
        )
    )
    return span, list(texts), list(members), list(notes)


def band_chart(
    metric: SlicedMetric,
    kind: str,
    span: Span,
    lines: Sequence[tuple[str, Sequence[float | None], str | None]],
    unit: str = "",
) -> Chart:
    """A chart of ``lines`` (``(label, values, band edge)``, the first the main line) over
    ``span``'s slices of measures, refreshed while its last slice is open."""
    refresh = refresh_seconds(span.step) if span.live else None
    return charts.lines_chart(
        metric.name, kind, span, lines, refresh=refresh, integer=False, unit=unit
    )


def chart_context(
    request: HttpRequest,
    context: dict[str, Any],
    metric: SlicedMetric,
    precision: int,
    chart: Chart,
    now: float,
    extra: Sequence[tuple[str, str]] = (),
) -> dict[str, Any]:
    """What a chart page's template needs besides its own figures: links to each precision,
    the range form and the export links, all keeping the chosen range (and ``extra``: a
    breakdown's group-by and filters)."""
    urls = context["metrics_urls"]
    chosen_history = history.chosen(request.GET)
    kept = {
        key: value for key, value in charts.range_query(request.GET).items() if key != "compare"
    }
    query = {"name": metric.name, "precision": precision, **kept}
    form = range_form(
        request,
        {"name": metric.name, "precision": precision},
        kept_since(metric, precision, now),
        now,
        precision,
    )
    form["hidden"] += list(extra)
    return {
        "data_url": breakdown.extended(with_query(urls["data"], **query), extra),
        "export_urls": {
            fmt: breakdown.extended(url, extra)
            for fmt, url in export.links(urls["data"], query).items()
        },
        "precision_links": [
            (
                p,
                label(p),
                breakdown.extended(
                    with_query(urls["chart"], name=metric.name, precision=p, **kept), extra
                ),
            )
            for p in metric.precisions
        ],
        "range_form": form,
        "history_links": history.links(urls["chart"], {"name": metric.name}, chosen_history),
        "history_range": chosen_history,
        "metric_name": metric.name,
        "metric": metric,
        "precision": precision,
        "precision_label": label(precision),
        "chart": chart,
        "payload": chart.payload(now),
    }
