"""A chart's data taken out: JSON (the payload the chart draws) or CSV, one row per point.

The CSV's first column is the slice or period start in ISO 8601 with the site's UTC offset
(``2026-11-23T14:05:00+01:00``), then its label as the chart shows it, the overlaid previous
period if any, a labelled metric's breakdown lines (``breakdown.py``), then the value, and when
the range holds annotations, an ``annotations`` column: the texts of those drawn on each point,
joined by `` | ``. Cells are numbers or dates we format, a breakdown line's heading (named
``label=value`` after an identifier) and annotation texts, which are user data: one starting
like a formula (``=``, ``+``, ``-``, ``@``) is prefixed with ``'``, so a spreadsheet finds no
formula in any cell.
"""

from __future__ import annotations

import csv
import io
import re
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, JsonResponse

from . import labels
from .charts import Chart
from .common import with_query

FORMATS = ("json", "csv")
#: The first characters that make a spreadsheet read a cell as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def links(data_url: str, query: dict[str, Any]) -> dict[str, str]:
    """``{"csv": url, "json": url}``: a chart page's export links, for its current range."""
    return {fmt: with_query(data_url, **query, format=fmt) for fmt in FORMATS}


def filename(chart: Chart) -> str:
    """A file name any system accepts: the metric's name with other characters replaced."""
    detail = f"{chart.step}s" if chart.step else chart.period or "points"
    stem = re.sub(r"[^A-Za-z0-9._-]+", "_", chart.name).strip("._") or "metric"
    return f"{stem}-{detail}.csv"


def csv_text(chart: Chart) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    compared = chart.series[1:]
    notes: dict[float, list[str]] = {}
    for note in chart.annotations:
        notes.setdefault(note["x"], []).append(note["text"])
    extra = ["annotations"] if notes else []
    writer.writerow(["start", "label", *(s.label for s in compared), "value", *extra])
    site = labels.site_zone()
    for i, start in enumerate(chart.x):
        texts = notes.get(i if chart.period else start, [])
        writer.writerow(
            [
                labels.iso_instant(start, site),
                chart.labels[i],
                *("" if s.values[i] is None else s.values[i] for s in compared),
                chart.values[i] if chart.values[i] is not None else "",
                *([no_formula(" | ".join(texts))] if notes else []),
            ]
        )
    return buffer.getvalue()


def no_formula(text: str) -> str:
    """``text`` as a cell no spreadsheet reads as a formula."""
    return "'" + text if text[:1] in FORMULA_STARTS else text


def respond(request: HttpRequest, chart: Chart) -> HttpResponse:
    """``?format=json`` (the default) or ``?format=csv`` (a download)."""
    fmt = request.GET.get("format") or "json"
    if fmt not in FORMATS:
        raise Http404(f"format must be one of {', '.join(FORMATS)}.")
    if fmt == "json":
        return JsonResponse(chart.payload())
    response = HttpResponse(csv_text(chart), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename(chart)}"'
    return response
