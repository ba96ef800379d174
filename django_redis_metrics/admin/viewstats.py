"""The figures of the Views page: per view, requests, error rates and response times over the
last hour and the last day, from what the middleware records.

A view's metrics are found by name: its ``Statistic`` ``VIEW_TIMER`` (``latency:{view}``), its
status-class counters ``VIEW_STATUS`` (``status:{view}:{class}``) and its hit counter
``VIEW_COUNTER`` (``hits:{view}``). A window is the newest slices covering it at the finest
precision that keeps enough of them (``counters.window_plan``: by default 60 one-minute slices
for the last hour, 24 one-hour slices for the last day, the current slice included); a
statistic's slices are merged into one summary (``histogram.parse_merged``). Everything is read
in three round trips whatever the number of views: names, configurations, slices.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..conf import conf
from ..core.base import Metric
from ..core.connection import RedisClient
from ..core.drive import drive
from ..core.sliced import SlicedMetric
from ..core.steps import Op, Steps, pipe_steps
from ..core.timeutil import slice_starts
from ..counter import Counter
from ..statistic import Statistic
from ..statistic.histogram import parse_merged
from .common import as_int
from .counters import window_plan
from .dashboard import configured, lookup_names
from .health_tiles import rate
from .tilebase import Lookup
from .tiles import name_pattern

#: The windows shown: ``(key, heading, seconds)``.
WINDOWS: tuple[tuple[str, str, int], ...] = (
    ("hour", "Last hour", 3600),
    ("day", "Last day", 86400),
)


@dataclass
class ViewMetrics:
    """The metrics the middleware keeps for one view (``None``/empty where it keeps none)."""

    view: str
    timer: Statistic | None = None
    hits: Counter | None = None
    status: dict[str, Counter] = field(default_factory=dict)


@dataclass
class Figures:
    """One view over one window; ``None`` where no metric (or no precision) gives the figure."""

    requests: int | None = None
    client_errors: int | None = None
    server_errors: int | None = None
    timed: int = 0
    mean: float | None = None
    p95: float | None = None
    max: float | None = None
    #: The precision of the slices read (for links to the charts of that precision).
    timer_precision: int | None = None
    counter_precision: int | None = None

    @property
    def client_rate(self) -> float | None:
        return None if self.client_errors is None else rate(self.client_errors, self.requests or 0)

    @property
    def server_rate(self) -> float | None:
        return None if self.server_errors is None else rate(self.server_errors, self.requests or 0)


def patterns() -> list[tuple[str, type[Metric], str, re.Pattern[str]]]:
    """``(role, model, literal prefix, pattern)`` of each name template that is turned on."""
    found: list[tuple[str, type[Metric], str, re.Pattern[str]]] = []
    if conf.VIEW_TIMER:
        found.append(("timer", Statistic, *name_pattern(conf.VIEW_TIMER, view=".+")))
    if conf.VIEW_STATUS and "{class}" in conf.VIEW_STATUS:
        classes = {"class": "[1-5]xx"}
        found.append(("status", Counter, *name_pattern(conf.VIEW_STATUS, view=".+", **classes)))
    if conf.VIEW_COUNTER:
        found.append(("hits", Counter, *name_pattern(conf.VIEW_COUNTER, view=".+")))
    return found


def find_views(client: RedisClient | None = None) -> list[ViewMetrics]:
    """Every view the middleware recorded something for, with its metrics as stored: two
    round trips (catalogue names by prefix, then the configurations)."""
    return drive(find_views_steps(), client)


def find_views_steps() -> Steps[list[ViewMetrics]]:
    chosen = patterns()
    lookups = sorted({Lookup(model.KIND, prefix) for _, model, prefix, _ in chosen})
    found = yield from lookup_names(lookups)
    matched: list[tuple[str, str, str, type[Metric], str]] = []
    for role, model, prefix, pattern in chosen:
        for name in found[Lookup(model.KIND, prefix)]:
            match = pattern.match(name)
            if match:
                cls = match.group("class") if role == "status" else ""
                matched.append((role, match.group("view"), cls, model, name))
    metrics = yield from configured(list(dict.fromkeys((m, n) for *_, m, n in matched)))
    views: dict[str, ViewMetrics] = {}
    for role, view, cls, model, name in matched:
        metric = metrics.get((model.KIND, name))
        if metric is None:
            continue
        entry = views.setdefault(view, ViewMetrics(view))
        if role == "timer" and isinstance(metric, Statistic):
            entry.timer = metric
        elif role == "status" and isinstance(metric, Counter):
            entry.status[cls] = metric
        elif role == "hits" and isinstance(metric, Counter) and entry.hits is None:
            entry.hits = metric
    return sorted(views.values(), key=lambda v: v.view)


class Plans:
    """The windows' slice plans, read in one pipeline, and what each plan covered."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.reads: list[Op] = []
        #: ``(window key, kind label, precision, slices)`` of every plan used.
        self.used: set[tuple[str, str, int, int]] = set()

    def queue(
        self, metric: SlicedMetric | Counter, window: str, seconds: int
    ) -> tuple[int, int] | None:
        """Queue the HMGET of ``metric``'s slices covering ``seconds``: ``(reply number,
        precision)``, or ``None`` when no precision keeps enough slices."""
        plan = window_plan(metric, seconds)
        if plan is None:
            return None
        self.reads.append(Op("hmget", metric.key(plan[0]), slice_starts(*plan, self.now)))
        self.used.add((window, metric.LABEL, *plan))
        return len(self.reads) - 1, plan[0]


def view_figures(
    views: Sequence[ViewMetrics], now: float
) -> tuple[list[dict[str, Figures]], set[tuple[str, str, int, int]]]:
    """Each view's figures per window, and the slice plans used: one round trip."""
    plans = Plans(now)
    queued = []
    for view in views:
        per_window = {}
        for key, _, seconds in WINDOWS:
            timer = plans.queue(view.timer, key, seconds) if view.timer else None
            status = {c: plans.queue(counter, key, seconds) for c, counter in view.status.items()}
            hits = plans.queue(view.hits, key, seconds) if view.hits else None
            per_window[key] = (timer, status, hits)
        queued.append(per_window)
    replies = drive(pipe_steps(plans.reads))
    results = []
    for per_window in queued:
        figures = {}
        for key, (timer, status, hits) in per_window.items():
            figures[key] = window_figures(replies, timer, status, hits)
        results.append(figures)
    return results, plans.used


def window_figures(
    replies: Sequence[Any],
    timer: tuple[int, int] | None,
    status: dict[str, tuple[int, int] | None],
    hits: tuple[int, int] | None,
) -> Figures:
    """One window's figures from the replies of its reads. Requests are the sum of the status
    classes when the middleware counts them, else the hit counter, else the timed requests."""
    found = Figures()
    if timer is not None:
        summary = parse_merged(replies[timer[0]])
        found.timed, found.mean, found.p95, found.max = (
            summary["count"],
            summary["mean"],
            summary["p95"],
            summary["max"],
        )
        found.timer_precision = timer[1]
        found.requests = found.timed
    classes = {c: sum(as_int(v) for v in replies[read[0]]) for c, read in status.items() if read}
    if classes:
        found.requests = sum(classes.values())
        found.client_errors = classes.get("4xx", 0)
        found.server_errors = classes.get("5xx", 0)
        found.counter_precision = next(read[1] for read in status.values() if read)
    elif hits is not None:
        found.requests = sum(as_int(v) for v in replies[hits[0]])
        found.counter_precision = hits[1]
    return found
