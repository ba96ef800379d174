"""The figures of the Views page: per view, requests, error rates and response times over the
last hour and the last day, from what the middleware records.

A view's metrics are the series of the middleware's labelled metrics, ``HITS_COUNTER`` (by
``view`` and ``status`` class) and ``LATENCY_STATISTIC`` (by ``view``), and the per-view names
written before labels (``hits:{view}``, ``status:{view}:{class}``, ``latency:{view}``), added
while no longer written (see :mod:`.viewsource`). A window is the newest slices covering it at
the finest precision that keeps enough of them (``counters.window_plan``: by default 60
one-minute slices for the last hour, 24 one-hour slices for the last day, the current slice
included); a statistic's slices are merged into one summary (``histogram.parse_merged``).
Everything is read in three round trips whatever the number of views: names,
configurations, slices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.connection import RedisClient
from ..core.drive import drive
from ..core.sliced import SlicedMetric
from ..core.steps import Op, Steps, pipe_steps
from ..core.timeutil import slice_starts
from ..counter import Counter
from ..statistic import Statistic
from ..statistic.histogram import parse_merged
from . import viewsource
from .common import as_int
from .counters import window_plan
from .dashboard import configured, lookup_names
from .health_tiles import rate

#: The windows shown: ``(key, heading, seconds)``.
WINDOWS: tuple[tuple[str, str, int], ...] = (
    ("hour", "Last hour", 3600),
    ("day", "Last day", 86400),
)


@dataclass
class ViewMetrics:
    """The metrics the middleware keeps for one view: its response times, its answers per
    status class, and its requests where no class is known (each a list: the labelled series
    and the names written before labels add up)."""

    view: str
    timers: list[Statistic] = field(default_factory=list)
    hits: list[Counter] = field(default_factory=list)
    status: dict[str, list[Counter]] = field(default_factory=dict)

    @property
    def timer(self) -> Statistic | None:
        """The view's first statistic (the page links to it)."""
        return self.timers[0] if self.timers else None


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


def find_views(client: RedisClient | None = None) -> list[ViewMetrics]:
    """Every view the middleware recorded something for, with its metrics as stored: two
    round trips (catalogue names by prefix, then the configurations)."""
    return drive(find_views_steps(), client)


def find_views_steps() -> Steps[list[ViewMetrics]]:
    found = yield from lookup_names(viewsource.lookups())
    entries = viewsource.per_view(found)
    metrics = yield from configured(list(dict.fromkeys((e.model, e.name) for e in entries)))
    views: dict[str, ViewMetrics] = {}
    for entry in entries:
        metric = metrics.get((entry.kind, entry.name))
        if metric is None:
            continue
        view = views.setdefault(entry.view, ViewMetrics(entry.view))
        if entry.role == "timer" and isinstance(metric, Statistic):
            view.timers.append(metric)
        elif entry.role == "status" and isinstance(metric, Counter):
            view.status.setdefault(entry.status, []).append(metric)
        elif entry.role == "hits" and isinstance(metric, Counter):
            view.hits.append(metric)
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
            timers = [plans.queue(timer, key, seconds) for timer in view.timers]
            status = {
                c: [plans.queue(counter, key, seconds) for counter in counters]
                for c, counters in view.status.items()
            }
            hits = [plans.queue(counter, key, seconds) for counter in view.hits]
            per_window[key] = (timers, status, hits)
        queued.append(per_window)
    replies = drive(pipe_steps(plans.reads))
    results = []
    for per_window in queued:
        figures = {}
        for key, (timers, status, hits) in per_window.items():
            figures[key] = window_figures(replies, timers, status, hits)
        results.append(figures)
    return results, plans.used


Read = tuple[int, int] | None


def window_figures(
    replies: Sequence[Any],
    timers: list[Read],
    status: dict[str, list[Read]],
    hits: list[Read],
) -> Figures:
    """One window's figures from the replies of its reads. Requests are the answers of every
    status class plus the hits counted without one, else the timed requests."""
    found = Figures()
    timed = [read for read in timers if read is not None]
    if timed:
        summary = parse_merged([text for read in timed for text in replies[read[0]]])
        found.timed, found.mean, found.p95, found.max = (
            summary["count"],
            summary["mean"],
            summary["p95"],
            summary["max"],
        )
        found.timer_precision = timed[0][1]
        found.requests = found.timed
    counted = [read for reads in status.values() for read in reads if read] + [
        read for read in hits if read
    ]
    if counted:
        classes = {
            c: sum(as_int(v) for read in reads if read for v in replies[read[0]])
            for c, reads in status.items()
        }
        plain = sum(as_int(v) for read in hits if read for v in replies[read[0]])
        found.requests = sum(classes.values()) + plain
        if classes:
            found.client_errors = classes.get("4xx", 0)
            found.server_errors = classes.get("5xx", 0)
        found.counter_precision = counted[0][1]
    return found
