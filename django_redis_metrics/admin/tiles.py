"""The dashboard's own tiles; ``DASHBOARD`` names them (``TILES``) in the order shown.

Days are the site's days (``sums.py``); every number links to the chart it comes from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from django.http import QueryDict

from ..bitmaps import UniqueBitmap
from ..conf import conf
from ..core.periods import period_class
from ..core.timeutil import slice_starts
from ..counter import Counter
from ..events import EventSeries
from ..events.codec import score
from . import charts, labels
from .common import as_int, refresh_seconds
from .counters import sparkline_precision, window_plan
from .sums import day_plans
from .tilebase import Env, Finish, Lookup, Metrics, Reads, Tile, limit_option

#: Points of the dashboard's requests-per-minute chart.
RATE_POINTS = 60


def change(now: float | None, before: float | None) -> int | None:
    """The change from ``before`` to ``now`` in whole percent (``None`` if unknown)."""
    if now is None or not before:
        return None
    return round(100 * (now - before) / before)


def midnight(now: float) -> float:
    """The start of the site's today."""
    return period_class("day").containing(now, labels.site_zone()).start_ts


class OneMetricTile(Tile):
    """A tile over one metric: the ``metric`` option, else the setting that names it."""

    model: type[Any] = Counter
    setting = ""

    def __init__(self, metric: str | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.metric = metric

    def metric_name(self) -> str | None:
        return self.metric or conf.get(self.setting)

    def wants(self, found: Mapping[Lookup, list[str]]) -> list[tuple[type[Any], str]]:
        name = self.metric_name()
        return [(self.model, name)] if name else []

    def missing(self) -> Finish:
        """The last step when the metric holds no data (or is turned off)."""
        name = self.metric_name()
        return lambda replies: {"missing": name}


class HitsTile(OneMetricTile):
    """Requests: the last minute, today vs the same time yesterday, and a per-minute chart."""

    name = "hits"
    title = "Requests"
    template = "django_redis_metrics/admin/tiles/hits.html"
    setting = "HITS_COUNTER"

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        counter = metrics.get((Counter.KIND, self.metric_name() or ""))
        if not isinstance(counter, Counter):
            return self.missing()
        days = day_plans(counter, env.now)
        ids: dict[str, int] = {}
        for key, plan in (("today", days.today), ("yesterday", days.yesterday)):
            if plan is not None:
                ids[key] = reads("hmget", counter.key(plan.precision), plan.starts)
        minute = window_plan(counter, 60)
        if minute is not None:
            ids["minute"] = reads("hmget", counter.key(minute[0]), slice_starts(*minute, env.now))
        step = 60 if 60 in counter.precisions else sparkline_precision(counter)
        oldest = int(env.now // step) * step - (counter.samples - 1) * step
        points = min(RATE_POINTS, counter.samples)
        span = charts.chosen_span(QueryDict(), step, env.now, oldest, points)
        ids["chart"] = reads("hmget", counter.key(step), span.starts)
        start = charts.input_value(days.midnight)

        def finish(replies: Any) -> dict[str, Any]:
            today = yesterday = None
            if days.today is not None:
                today = int(days.today.total(replies[ids["today"]]))
            if days.yesterday is not None:
                yesterday = round(days.yesterday.total(replies[ids["yesterday"]]))
            chart = charts.slice_chart(
                counter.name,
                "counter",
                span,
                [as_int(v) for v in replies[ids["chart"]]],
                refresh_seconds(step),
            )
            links = env.links
            return {
                "counter": counter.name,
                "minute": sum(as_int(v) for v in replies[ids["minute"]]) if minute else None,
                "minute_url": links.counter(counter.name, precision=minute[0]) if minute else "",
                "today": today,
                "today_url": links.counter(
                    counter.name, precision=days.today.precision, start=start
                )
                if days.today
                else "",
                "yesterday": yesterday,
                "yesterday_url": links.counter(
                    counter.name, precision=days.yesterday.precision, compare="day", start=start
                )
                if days.yesterday
                else "",
                "yesterday_estimated": bool(days.yesterday and days.yesterday.cut is not None),
                "change": change(today, yesterday),
                "chart": chart,
                "payload": chart.payload(env.now),
                "chart_url": links.counter(counter.name, precision=step),
                "data_url": links.counter_data(counter.name, precision=step, points=points),
                "rate": labels.rate(step),
            }

        return finish


class ActiveUsersTile(OneMetricTile):
    """Distinct signed-in users today, this week and this month."""

    name = "active_users"
    title = "Active users"
    template = "django_redis_metrics/admin/tiles/active_users.html"
    model = UniqueBitmap
    setting = "ACTIVE_USERS"
    KINDS = ("day", "week", "month")

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        bitmap = metrics.get((UniqueBitmap.KIND, self.metric_name() or ""))
        if not isinstance(bitmap, UniqueBitmap):
            return self.missing()
        periods = [period_class(k).containing(env.now) for k in self.KINDS if k in bitmap.periods]
        ids = [reads("bitcount", bitmap.key(period)) for period in periods]
        url = env.links.bitmap(bitmap.name)

        def finish(replies: Any) -> dict[str, Any]:
            return {
                "bitmap": bitmap.name,
                "url": url,
                "counts": [
                    (p.name, labels.period_label(p), int(replies[i]))
                    for p, i in zip(periods, ids, strict=True)
                ],
            }

        return finish


def name_pattern(template: str, **groups: str) -> tuple[str, re.Pattern[str]]:
    """The literal prefix of a name template (``hits:{view}`` -> ``hits:``), and a regular
    expression matching the names it makes, with a group per placeholder."""
    prefix = template.split("{", 1)[0]
    pattern = re.escape(template)
    for group, regex in groups.items():
        pattern = pattern.replace(re.escape("{" + group + "}"), f"(?P<{group}>{regex})")
    return prefix, re.compile(pattern + r"\Z")


class TemplateTile(Tile):
    """A tile over the metrics whose names a template makes (``hits:{view}``): it looks up
    only the names starting with the template's literal prefix, and keeps those matching."""

    default_limit = 5

    def __init__(self, limit: int | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.limit = limit_option(self.default_limit if limit is None else limit)

    def model(self) -> Any:
        """The model of the metrics (``None``: not available, the tile reads nothing)."""
        return Counter

    def pattern(self) -> tuple[str, re.Pattern[str]] | None:
        raise NotImplementedError

    def lookups(self) -> list[Lookup]:
        model, found = self.model(), self.pattern()
        return [Lookup(model.KIND, found[0])] if model is not None and found else []

    def wants(self, found: Mapping[Lookup, list[str]]) -> list[tuple[type[Any], str]]:
        model, pattern = self.model(), self.pattern()
        if model is None or pattern is None:
            return []
        names = found.get(Lookup(model.KIND, pattern[0]), [])
        return [(model, name) for name in names if pattern[1].match(name)]

    def matching(self, metrics: Metrics) -> list[tuple[re.Match[str], Any]]:
        """``(name match, metric)`` of the wanted metrics that hold data, by name."""
        model, pattern = self.model(), self.pattern()
        if model is None or pattern is None:
            return []
        found = []
        for (kind, name), metric in sorted(metrics.items()):
            match = pattern[1].match(name) if kind == model.KIND else None
            if match is not None and metric is not None:
                found.append((match, metric))
        return found


class TopViewsTile(TemplateTile):
    """The views with the most requests today (the middleware's per-view counters)."""

    name = "top_views"
    title = "Top views today"
    template = "django_redis_metrics/admin/tiles/top_views.html"
    default_limit = 10

    def pattern(self) -> tuple[str, re.Pattern[str]] | None:
        template = conf.VIEW_COUNTER
        return name_pattern(template, view=".+") if template else None

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        wanted = []
        for match, counter in self.matching(metrics):
            plan = day_plans(counter, env.now).today
            if plan is not None:
                read = reads("hmget", counter.key(plan.precision), plan.starts)
                wanted.append((match.group("view"), counter, plan, read))
        start = charts.input_value(midnight(env.now))

        def finish(replies: Any) -> dict[str, Any]:
            rows: list[dict[str, Any]] = [
                {
                    "view": view,
                    "count": int(plan.total(replies[read])),
                    "url": env.links.counter(counter.name, precision=plan.precision, start=start),
                }
                for view, counter, plan, read in wanted
            ]
            rows.sort(key=lambda row: (-row["count"], row["view"]))
            return {"rows": [row for row in rows if row["count"]][: self.limit]}

        return finish


class BusiestEventsTile(Tile):
    """The event series with the most events in the last hour, and their counts today."""

    name = "events"
    title = "Busiest event series"
    template = "django_redis_metrics/admin/tiles/events.html"

    def __init__(self, limit: int = 5, **options: Any) -> None:
        super().__init__(**options)
        self.limit = limit_option(limit)

    def lookups(self) -> list[Lookup]:
        return [Lookup(EventSeries.KIND, "")]

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        names = env.found.get(Lookup(EventSeries.KIND, ""), [])
        today_start = midnight(env.now)
        now = score(env.now)
        queued = []
        for name in names:
            series = EventSeries(name)
            hour = reads("zcount", series.time_key, score(env.now - 3600), now)
            today = reads("zcount", series.time_key, score(today_start), now)
            queued.append((name, hour, today))
        start = charts.input_value(today_start)

        def finish(replies: Any) -> dict[str, Any]:
            rows: list[dict[str, Any]] = [
                {
                    "name": name,
                    "hour": int(replies[hour]),
                    "hour_url": env.links.series(name, window=60),
                    "today": int(replies[today]),
                    "today_url": env.links.series(name, window=3600, start=start),
                }
                for name, hour, today in queued
            ]
            rows.sort(key=lambda row: (-row["hour"], -row["today"], row["name"]))
            return {"rows": [row for row in rows if row["today"] or row["hour"]][: self.limit]}

        return finish
