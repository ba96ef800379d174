"""The dashboard's site-health tiles: error rate from the middleware's answers per view and
status class, and the slowest views from its response times per view.

Both read the series of the middleware's labelled metrics, ``HITS_COUNTER`` (``view``,
``status``: ``2xx`` ... ``5xx``) and ``LATENCY_STATISTIC`` (``view``, milliseconds), and the
per-view names written before labels (``status:{view}:{class}``, ``latency:{view}``), see
:mod:`.viewsource`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from django.urls import NoReverseMatch, reverse

from ..conf import conf
from ..core.timeutil import slice_start, slice_starts
from ..statistic.histogram import parse_merged
from . import charts
from .common import with_query
from .counters import window_plan
from .sums import day_plans
from .tilebase import Env, Finish, Metrics, Reads, chart_query
from .tiles import ViewsTile, midnight

STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")


class ErrorRateTile(ViewsTile):
    """Requests answered with 4xx and 5xx, today and in the last hour, and the views with the
    most server errors."""

    name = "errors"
    title = "Errors"
    template = "django_redis_metrics/admin/tiles/errors.html"
    ROLES = frozenset({"status"})

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        queued = []
        for entry, counter in self.stored(metrics, env):
            today = day_plans(counter, env.now).today
            hour = window_plan(counter, 3600)
            day_read = hour_read = None
            if today is not None:
                day_read = reads("hmget", counter.key(today.precision), today.starts)
            if hour is not None:
                hour_read = reads("hmget", counter.key(hour[0]), slice_starts(*hour, env.now))
            queued.append((entry.view, entry.status, counter, today, day_read, hour_read))
        start = charts.input_value(midnight(env.now))

        def finish(replies: Sequence[Any]) -> dict[str, Any]:
            today: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(STATUS_CLASSES, 0))
            hour: dict[str, int] = dict.fromkeys(STATUS_CLASSES, 0)
            urls: dict[tuple[str, str], str] = {}
            for view, cls, counter, plan, day_read, hour_read in queued:
                if day_read is not None and plan is not None:
                    today[view][cls] = today[view].get(cls, 0) + int(plan.total(replies[day_read]))
                    urls[view, cls] = env.links.counter(
                        counter.name, precision=plan.precision, start=start
                    )
                if hour_read is not None:
                    hour[cls] = hour.get(cls, 0) + sum(int(v or 0) for v in replies[hour_read])
            rows: list[dict[str, Any]] = []
            for view, classes in today.items():
                total = sum(classes.values())
                rows.append(
                    {
                        "view": view,
                        "total": total,
                        "client": classes.get("4xx", 0),
                        "client_url": urls.get((view, "4xx"), ""),
                        "server": classes.get("5xx", 0),
                        "server_url": urls.get((view, "5xx"), ""),
                        "rate": rate(classes.get("5xx", 0), total),
                    }
                )
            rows.sort(key=lambda row: (-row["server"], -row["client"], row["view"]))
            all_today = sum(row["total"] for row in rows)
            server_today = sum(row["server"] for row in rows)
            return {
                "found": bool(queued),
                "counter": conf.HITS_COUNTER,
                "today": {"total": all_today, "server": server_today},
                "today_rate": rate(server_today, all_today),
                "hour": {"total": sum(hour.values()), "server": hour.get("5xx", 0)},
                "hour_rate": rate(hour.get("5xx", 0), sum(hour.values())),
                "rows": [row for row in rows if row["server"] or row["client"]][: self.limit],
            }

        return finish


def rate(part: int, whole: int) -> float | None:
    """``part`` of ``whole`` in percent, one decimal (``None`` when nothing was counted)."""
    return round(100 * part / whole, 1) if whole else None


class SlowestViewsTile(ViewsTile):
    """The views with the highest mean latency this hour (the series of
    ``LATENCY_STATISTIC``, and the ``latency:{view}`` statistics written before labels)."""

    name = "slowest_views"
    title = "Slowest views this hour"
    template = "django_redis_metrics/admin/tiles/slowest_views.html"
    PRECISION = 3600
    ROLES = frozenset({"timer"})

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        queued: dict[str, list[tuple[Any, int, int]]] = defaultdict(list)
        hour = slice_start(env.now, self.PRECISION)
        for entry, statistic in self.stored(metrics, env):
            if self.PRECISION in statistic.precisions:  # this hour's slice of each, merged
                read = reads("hmget", statistic.key(self.PRECISION), [hour])
                queued[entry.view].append((statistic, self.PRECISION, read))

        def finish(replies: Sequence[Any]) -> dict[str, Any]:
            rows = []
            for view, found in queued.items():
                texts = [text for _, _, at in found for text in replies[at]]
                summary = parse_merged(texts)
                if summary.get("count"):
                    statistic, precision, _ = found[0]
                    url = statistic_url(statistic.name, precision)
                    rows.append({"view": view, **summary, "url": url})
            rows.sort(key=lambda row: (-row["mean"], row["view"]))
            return {"rows": rows[: self.limit], "views_url": views_url()}

        return finish


def views_url() -> str:
    """The Views page: every view's response times and errors."""
    try:
        return reverse("admin:django_redis_metrics_viewsmetric_changelist")
    except NoReverseMatch:
        return ""


def statistic_url(name: str, precision: int | None = None) -> str:
    """The statistic's admin page, if the admin has one."""
    query: dict[str, Any] = chart_query(name)
    if precision is not None:
        query["precision"] = precision
    try:
        return with_query(reverse("admin:django_redis_metrics_statisticmetric_chart"), **query)
    except NoReverseMatch:
        return ""
