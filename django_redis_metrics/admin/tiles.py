"""The dashboard's own tiles; ``DASHBOARD`` names them (``TILES``) in the order shown.

Days are the site's days (``sums.py``); every number links to the chart it comes from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from django.http import QueryDict

from ..bitmaps import UniqueBitmap
from ..conf import conf
from ..core.labels.labelling import SEPARATOR
from ..core.periods import period_class
from ..core.timeutil import slice_starts
from ..counter import Counter
from ..events import EventSeries
from ..events.codec import score
from . import annotating, charts, labels, viewsource
from .common import as_int, refresh_seconds
from .counters import sparkline_precision, window_plan
from .sums import SpanPlan, day_plans
from .tilebase import Env, Finish, Lookup, Metrics, Reads, Tile, limit_option
from .viewsource import REQUESTS

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
    """Requests: the last minute, today vs the same time yesterday, and a per-minute chart.

    The counter read as a whole: its own slices (what an unlabelled counter, or the
    middleware before labels, wrote) and those of each of its series (``HITS_COUNTER`` is
    labelled by view and status), added slice by slice."""

    name = "hits"
    title = "Requests"
    template = "django_redis_metrics/admin/tiles/hits.html"
    setting = "HITS_COUNTER"

    def lookups(self) -> list[Lookup]:
        name = self.metric_name()
        return [Lookup(self.model.KIND, name + SEPARATOR)] if name else []

    def wants(self, found: Mapping[Lookup, list[str]]) -> list[tuple[type[Any], str]]:
        name = self.metric_name()
        if not name:
            return []
        series = found.get(Lookup(self.model.KIND, name + SEPARATOR), [])
        return [(self.model, name), *((self.model, member) for member in series)]

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        name = self.metric_name() or ""
        members = [
            metric
            for (kind, member), metric in metrics.items()
            if kind == Counter.KIND
            and (member == name or member.startswith(name + SEPARATOR))
            and isinstance(metric, Counter)
        ]
        if not name or not members:
            return self.missing()
        counter = next((m for m in members if m.name == name), members[0])
        days = day_plans(counter, env.now)
        minute = window_plan(counter, 60)
        step = 60 if 60 in counter.precisions else sparkline_precision(counter)
        oldest = int(env.now // step) * step - (counter.samples - 1) * step
        points = min(RATE_POINTS, counter.samples)
        span = charts.chosen_span(QueryDict(), step, env.now, oldest, points)
        queued = [_queue_hits(reads, member, env.now, step, span.starts) for member in members]
        notes_read = annotating.read_op(span)
        notes = reads(notes_read.method, *notes_read.args)
        start = charts.input_value(days.midnight)

        def finish(replies: Any) -> dict[str, Any]:
            today = yesterday = minutes = None
            values = [0] * len(span.starts)
            for read in queued:
                if read.today is not None:
                    today = (today or 0) + int(read.today[0].total(replies[read.today[1]]))
                if read.yesterday is not None:
                    plan, at = read.yesterday
                    yesterday = (yesterday or 0) + plan.total(replies[at])
                if read.minute is not None:
                    minutes = (minutes or 0) + sum(as_int(v) for v in replies[read.minute])
                if read.chart is not None:
                    values = [
                        a + as_int(b) for a, b in zip(values, replies[read.chart], strict=True)
                    ]
            chart = charts.slice_chart(name, "counter", span, values, refresh_seconds(step))
            annotating.attach(chart, replies[notes])
            links = env.links
            return {
                "counter": name,
                "minute": minutes if minute else None,
                "minute_url": links.counter(name, precision=minute[0]) if minute else "",
                "today": today,
                "today_url": links.counter(name, precision=days.today.precision, start=start)
                if days.today
                else "",
                "yesterday": None if yesterday is None else round(yesterday),
                "yesterday_url": links.counter(
                    name, precision=days.yesterday.precision, compare="day", start=start
                )
                if days.yesterday
                else "",
                "yesterday_estimated": bool(days.yesterday and days.yesterday.cut is not None),
                "change": change(today, None if yesterday is None else round(yesterday)),
                "chart": chart,
                "payload": chart.payload(env.now),
                "chart_url": links.counter(name, precision=step),
                "data_url": links.counter_data(name, precision=step, points=points),
                "rate": labels.rate(step),
            }

        return finish


@dataclass
class _HitsReads:
    """The reads of one counter (or series) of the hits tile: ``(plan, reply number)`` of
    today and yesterday, the reply numbers of the last minute and of the chart."""

    today: tuple[SpanPlan, int] | None
    yesterday: tuple[SpanPlan, int] | None
    minute: int | None
    chart: int | None


def _queue_hits(
    reads: Reads, counter: Counter, now: float, step: int, starts: list[int]
) -> _HitsReads:
    days = day_plans(counter, now)
    found: list[tuple[SpanPlan, int] | None] = []
    for plan in (days.today, days.yesterday):
        found.append(
            None
            if plan is None
            else (plan, reads("hmget", counter.key(plan.precision), plan.starts))
        )
    minute = window_plan(counter, 60)
    return _HitsReads(
        found[0],
        found[1],
        None
        if minute is None
        else reads("hmget", counter.key(minute[0]), slice_starts(*minute, now)),
        reads("hmget", counter.key(step), starts) if step in counter.precisions else None,
    )


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


class ViewsTile(Tile):
    """A tile over the middleware's per-view metrics of some ``ROLES`` (see
    :mod:`.viewsource`: the labelled series, and the names written before labels)."""

    ROLES: ClassVar[frozenset[str]] = REQUESTS
    default_limit = 5

    def __init__(self, limit: int | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.limit = limit_option(self.default_limit if limit is None else limit)

    def lookups(self) -> list[Lookup]:
        return viewsource.lookups(self.ROLES)

    def wants(self, found: Mapping[Lookup, list[str]]) -> list[tuple[type[Any], str]]:
        return [(entry.model, entry.name) for entry in viewsource.per_view(found, self.ROLES)]

    def stored(self, metrics: Metrics, env: Env) -> list[tuple[viewsource.PerView, Any]]:
        """``(entry, metric)`` of the per-view metrics that hold data, by view."""
        found = []
        for entry in viewsource.per_view(env.found, self.ROLES):
            metric = metrics.get((entry.kind, entry.name))
            if metric is not None:
                found.append((entry, metric))
        return found


class TopViewsTile(ViewsTile):
    """The views with the most requests today: each view's answers of every status class (the
    series of ``HITS_COUNTER``, and the per-view names written before labels)."""

    name = "top_views"
    title = "Top views today"
    template = "django_redis_metrics/admin/tiles/top_views.html"
    default_limit = 10

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        wanted = []
        for entry, counter in self.stored(metrics, env):
            plan = day_plans(counter, env.now).today
            if plan is not None:
                read = reads("hmget", counter.key(plan.precision), plan.starts)
                wanted.append((entry.view, counter, plan, read))
        start = charts.input_value(midnight(env.now))

        def finish(replies: Any) -> dict[str, Any]:
            counts: dict[str, int] = {}
            urls: dict[str, tuple[int, str]] = {}
            for view, counter, plan, read in wanted:
                count = int(plan.total(replies[read]))
                counts[view] = counts.get(view, 0) + count
                # the link: the view's busiest metric (one status class of it, most often 2xx)
                if count > urls.get(view, (-1, ""))[0]:
                    url = env.links.counter(counter.name, precision=plan.precision, start=start)
                    urls[view] = (count, url)
            rows: list[dict[str, Any]] = [
                {"view": view, "count": count, "url": urls[view][1]}
                for view, count in counts.items()
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
