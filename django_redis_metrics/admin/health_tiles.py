"""The dashboard's site-health tiles: error rate from the per-view status counters, and the
slowest views from the per-view latency statistics.

Both read what the middleware names ``status:{view}:{class}`` (plain counters, ``class`` being
``2xx`` ... ``5xx``; its ``VIEW_STATUS`` setting) and ``latency:{view}`` (``Statistic``\\ s of
milliseconds; its ``VIEW_TIMER`` setting).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from django.urls import NoReverseMatch, reverse

from ..conf import conf
from ..core.timeutil import slice_starts
from . import charts
from .common import with_query
from .counters import window_plan
from .sums import day_plans
from .tilebase import Env, Finish, Metrics, Reads
from .tiles import TemplateTile, midnight, name_pattern

STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")


class ErrorRateTile(TemplateTile):
    """Requests answered with 4xx and 5xx, today and in the last hour, and the views with the
    most server errors."""

    name = "errors"
    title = "Errors"
    template = "django_redis_metrics/admin/tiles/errors.html"

    def pattern(self) -> tuple[str, re.Pattern[str]] | None:
        template = conf.VIEW_STATUS
        if template is None or "{class}" not in template:
            return None
        return name_pattern(template, view=".+", **{"class": "[1-5]xx"})

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        queued = []
        for match, counter in self.matching(metrics):
            today = day_plans(counter, env.now).today
            hour = window_plan(counter, 3600)
            day_read = hour_read = None
            if today is not None:
                day_read = reads("hmget", counter.key(today.precision), today.starts)
            if hour is not None:
                hour_read = reads("hmget", counter.key(hour[0]), slice_starts(*hour, env.now))
            queued.append(
                (match.group("view"), match.group("class"), counter, today, day_read, hour_read)
            )
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
                "template": conf.VIEW_STATUS,
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


def statistic_model() -> Any:
    """The ``Statistic`` model, once the package has one (``None`` before)."""
    import django_redis_metrics as package

    return getattr(package, "Statistic", None)


#: LATENCY HOOK: the method of ``Statistic`` this tile reads summaries through.
#: ``statistic.summary_reads(precision, when) -> (commands, parse)``: ``commands`` is a list
#: of ``(redis-py pipeline method name, args tuple)`` read in the dashboard's shared pipeline,
#: and ``parse(replies)`` turns their replies (in order) into ``summary()``'s dict (``count``,
#: ``sum``, ``min``, ``max``, ``mean``, ``stddev``). It keeps the dashboard at three round trips.
SUMMARY_HOOK = "summary_reads"


class SlowestViewsTile(TemplateTile):
    """The views with the highest mean latency this hour (``latency:{view}`` statistics)."""

    name = "slowest_views"
    title = "Slowest views this hour"
    template = "django_redis_metrics/admin/tiles/slowest_views.html"
    PRECISION = 3600

    def model(self) -> Any:
        model = statistic_model()
        return model if model is not None and hasattr(model, SUMMARY_HOOK) else None

    def pattern(self) -> tuple[str, re.Pattern[str]] | None:
        template = conf.VIEW_TIMER
        return name_pattern(template, view=".+") if template else None

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        if self.model() is None or self.pattern() is None:
            return lambda replies: {"unavailable": True, "hook": SUMMARY_HOOK}
        queued: list[tuple[str, Any, list[int], Callable[[list[Any]], dict[str, Any]]]] = []
        for match, statistic in self.matching(metrics):
            commands, parse = getattr(statistic, SUMMARY_HOOK)(self.PRECISION, env.now)
            ids = [reads(command, *args) for command, args in commands]
            queued.append((match.group("view"), statistic, ids, parse))

        def finish(replies: Sequence[Any]) -> dict[str, Any]:
            rows = []
            for view, statistic, ids, parse in queued:
                summary = parse([replies[i] for i in ids])
                if summary.get("count"):
                    rows.append({"view": view, **summary, "url": statistic_url(statistic.name)})
            rows.sort(key=lambda row: (-row["mean"], row["view"]))
            return {"rows": rows[: self.limit], "views_url": views_url()}

        return finish


def views_url() -> str:
    """The Views page: every view's response times and errors."""
    try:
        return reverse("admin:django_redis_metrics_viewsmetric_changelist")
    except NoReverseMatch:
        return ""


def statistic_url(name: str) -> str:
    """The statistic's admin page, if the admin has one."""
    try:
        return with_query(reverse("admin:django_redis_metrics_statisticmetric_chart"), name=name)
    except NoReverseMatch:
        return ""
