"""``MetricsMiddleware``: hits, status classes and response times per view, and active users.

For every request that is not excluded it records, after the view has answered:

- one hit on the ``Counter`` ``HITS_COUNTER`` (default ``"hits"``), labelled by ``view`` and
  ``status``: ``view`` is the resolved view name (``resolver_match.view_name``), never the raw
  path; requests that resolve to no view are ``UNRESOLVED_VIEW``, and views beyond
  ``MAX_VIEW_COUNTERS`` (per process) ``OTHER_VIEW``, so a crawler cannot create series;
  ``status`` is the class of the answer, ``2xx 3xx 4xx 5xx`` (a view that raises is ``5xx``).
  Read without labels, the counter is the site's hits;
- the response time in milliseconds (from this middleware handing the request on until the
  response comes back to it) in the ``Statistic`` ``LATENCY_STATISTIC`` (default
  ``"latency"``), labelled by ``view``;
- when a site sets them, the plain per-view metrics of the versions before labels
  (``VIEW_COUNTER``, ``VIEW_STATUS``, ``VIEW_TIMER``: name templates, off by default);
- the authenticated user in the ``ACTIVE_USERS`` bitmap, when the request loaded its user
  anyway (the view, a template or another middleware read ``request.user`` or awaited
  ``request.auser()``): the middleware never loads the user itself, which would cost a session
  and a user query on every request and add ``Vary: Cookie`` to every response;
- whatever the view decorators of this request queued.

All of it goes to Redis in one pipelined round trip, sent by the process's sender thread
(:mod:`django_redis_metrics.sending.sender`): the request, sync or async, only queues its writes
and never waits on Redis (a series new to the process is admitted first, by the sender, once).
If Redis is down or slow, the request is served as if the middleware were not there (see
:mod:`django_redis_metrics.sending.failopen`).

The labelled metrics and their series live on the :class:`RequestPlan` (kept until the settings
change), so the writes of one series are always the same object: the sender merges the hits of
one series in one second into one increment (``sending/writes.py`` merges by identity).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from fnmatch import fnmatchcase
from functools import lru_cache
from typing import Any, NamedTuple

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponseBase
from django.urls import get_script_prefix

from .conf import SETTING_NAME, Settings, conf
from .core.keys import validate_name
from .counter import Counter
from .sending import sender
from .sending.requests import attach_writes, loaded_user_id
from .sending.writes import Writes
from .statistic import Statistic

logger = logging.getLogger("django_redis_metrics")

GetResponse = Callable[[HttpRequest], HttpResponseBase]
AsyncGetResponse = Callable[[HttpRequest], Awaitable[HttpResponseBase]]


class ViewNames:
    """The per-process set of view names that have their own counter, capped."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def admit(self, view: str, limit: int) -> bool:
        if view in self._seen:
            return True
        with self._lock:
            if len(self._seen) >= limit:
                return False
            self._seen.add(view)
            return True

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()


view_names = ViewNames()
os.register_at_fork(after_in_child=view_names._after_fork_in_child)


#: The app of our own views (the Prometheus exposition): never counted as the site's traffic,
#: whatever ``EXCLUDE_VIEWS`` says and under whatever namespace the site includes them (a
#: scrape every 15 s would add 5,760 hits a day).
OWN_APP = "django_redis_metrics"


def is_own_view(request: HttpRequest) -> bool:
    """Whether ``request`` resolved to one of this app's own views."""
    match = getattr(request, "resolver_match", None)
    return match is not None and OWN_APP in match.app_names


def view_name(request: HttpRequest) -> str | None:
    """The resolved view name of ``request``, or ``None`` when it resolved to no view."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return None
    return match.view_name or None


STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")
#: The labels of the middleware's metrics.
HITS_LABELS = ("view", "status")
LATENCY_LABELS = ("view",)


def view_series_cap(max_views: int) -> int:
    """The ``max_series`` of the latency statistic: every view label one process may write
    (``MAX_VIEW_COUNTERS`` views, ``UNRESOLVED_VIEW`` and ``OTHER_VIEW``). The hits counter
    keeps four times as many, one series per status class.

    Set explicitly rather than left to ``MAX_SERIES`` (1,000 by default, below the 2,008 series
    of 502 view labels in 4 classes): the per-process view cap is what folds views into
    ``OTHER_VIEW``, and ``max_series`` only bounds the total when processes admit different
    views (a site with more views than the cap), past which series go to ``__other__``."""
    return max_views + 2


class RequestPlan:
    """What the middleware records for a request, read from the settings once per change of
    them (see :func:`request_plan`): the labelled metrics, and each view's series (and old
    per-view names) made once (view labels are bounded), so that the same series is always
    the same object."""

    def __init__(self, options: Settings) -> None:
        #: The setting it was made from (the very object).
        self.raw = options.raw
        self.active = options.ACTIVE_USERS
        self.exclude_paths = options.EXCLUDE_PATHS
        self.exclude_views = options.EXCLUDE_VIEWS
        self.unresolved_view = options.UNRESOLVED_VIEW
        self.other_view = options.OTHER_VIEW
        self.max_view_counters = options.MAX_VIEW_COUNTERS
        cap = view_series_cap(self.max_view_counters)
        hits, latency = options.HITS_COUNTER, options.LATENCY_STATISTIC
        #: The labelled metrics (``None`` when turned off).
        self.hits = None if hits is None else Counter(hits, labels=HITS_LABELS, max_series=4 * cap)
        self.latency = (
            None if latency is None else Statistic(latency, labels=LATENCY_LABELS, max_series=cap)
        )
        #: The name templates of the versions before labels (``None``: not written).
        self.per_view = options.VIEW_COUNTER
        self.timer = options.VIEW_TIMER
        self.status = options.VIEW_STATUS
        self.per_view_metrics = any(
            m is not None for m in (self.hits, self.latency, self.per_view, self.timer, self.status)
        )
        self._views: dict[str, ViewMetrics] = {}
        self._lock = threading.RLock()

    def is_excluded(self, request: HttpRequest, view: str | None) -> bool:
        path = request.path_info  # without the script prefix, like conf.EXCLUDE_PATHS
        if path.startswith(self.exclude_paths) or is_own_view(request):
            return True
        return view is not None and _view_excluded(view, self.exclude_views)

    def view_label(self, view: str | None) -> str:
        """The ``view`` label of a request's metrics: its resolved name, bounded (requests that
        resolve to no view fold into ``UNRESOLVED_VIEW``, views past the cap into
        ``OTHER_VIEW``)."""
        if view is None:
            return self.unresolved_view
        if not view_names.admit(view, self.max_view_counters):
            return self.other_view
        return view

    def metrics_of(self, label: str) -> ViewMetrics:
        """One view's series and old per-view names, made on its first request."""
        found = self._views.get(label)
        if found is None:
            with self._lock:  # two threads must not make two series objects of one view
                found = self._views.get(label)
                if found is None:
                    found = self._views[label] = self._made(label)
        return found

    def _made(self, label: str) -> ViewMetrics:
        """``label``'s metrics; a view name that cannot be a label value (over 100
        characters, braces) is written as ``OTHER_VIEW`` (the same objects: called under the
        plan's re-entrant lock)."""
        if label != self.other_view and not _labels_ok(self, label):
            return self.metrics_of(self.other_view)
        hits: dict[str, Counter] = {}
        if self.hits is not None:
            hits = {cls: self.hits.labels(view=label, status=cls) for cls in STATUS_CLASSES}
        return ViewMetrics(
            hits,
            None if self.latency is None else self.latency.labels(view=label),
            self._filled(self.per_view, label),
            self._filled(self.timer, label),
            {cls: self._filled(self.status, label, cls) for cls in STATUS_CLASSES},
        )

    def _filled(self, template: str | None, label: str, status_class: str = "") -> str | None:
        """``template`` filled in for one view; a view name that cannot name a metric folds
        into ``OTHER_VIEW``."""
        if template is None:
            return None
        name = template.replace("{class}", status_class)
        try:
            return validate_name(name.replace("{view}", label))
        except (TypeError, ValueError):
            return name.replace("{view}", self.other_view)


def _labels_ok(plan: RequestPlan, label: str) -> bool:
    """Whether ``label`` is a valid ``view`` label value of the plan's metrics."""
    try:
        if plan.hits is not None:
            plan.hits.labels(view=label, status="2xx")
        if plan.latency is not None:
            plan.latency.labels(view=label)
    except (TypeError, ValueError):
        return False
    return True


class ViewMetrics(NamedTuple):
    #: The hits counter's series of the view, per status class (empty when it is off).
    hits: dict[str, Counter]
    latency: Statistic | None
    #: The names of the versions before labels (``None`` where not written).
    counter: str | None
    timer: str | None
    status: dict[str, str | None]


#: The plan of each script prefix (``EXCLUDE_PATHS``' default depends on it), made on the first
#: request after a change of the settings it is made from.
_plans: dict[str, RequestPlan] = {}
#: Script prefixes are few (one per deployment); past this many, the plans start afresh.
MAX_PLANS = 64
#: Django settings a plan is made from: the app's own, and those of ``EXCLUDE_PATHS``' default.
PLAN_SETTINGS = frozenset(
    {SETTING_NAME, "STATIC_URL", "MEDIA_URL", "FORCE_SCRIPT_NAME", "TIME_ZONE"}
)


def request_plan() -> RequestPlan:
    """The plan for the settings as they are now: made once, then kept until Django's
    ``setting_changed`` signal (sent by ``override_settings`` and the ``settings`` fixture)
    says one of :data:`PLAN_SETTINGS` changed, or the setting is another object (assigned
    without the signal; and a plan made by another thread from the setting just replaced is
    not kept). A setting edited in place, which Django's documentation forbids, is not seen."""
    raw = conf.raw
    prefix = get_script_prefix()
    plan = _plans.get(prefix)
    if plan is None or plan.raw is not raw:
        if len(_plans) >= MAX_PLANS:
            _plans.clear()
        plan = _plans[prefix] = RequestPlan(Settings(raw))
    return plan


# A plan's lock may be held by another thread at a fork: the child makes its own plans.
os.register_at_fork(after_in_child=_plans.clear)


@receiver(setting_changed)
def _forget_plans(*, setting: str, **kwargs: Any) -> None:
    if setting in PLAN_SETTINGS:
        _plans.clear()


@lru_cache(maxsize=4096)
def _view_excluded(view: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``view`` matches one of ``patterns`` (remembered: view names are few)."""
    return any(fnmatchcase(view, pattern) for pattern in patterns)


def status_class(status: int) -> str:
    """``2xx`` ... ``5xx`` (informational answers count with ``2xx``, odd codes as ``5xx``)."""
    family = status // 100
    return f"{family}xx" if 2 <= family <= 5 else ("2xx" if family == 1 else "5xx")


def queue_request_writes(
    request: HttpRequest,
    writes: Writes,
    uid: Any = None,
    status: int = 200,
    elapsed_ms: float | None = None,
    plan: RequestPlan | None = None,
) -> None:
    """Queue what the middleware records for ``request`` (nothing if it is excluded): its hits,
    its status class, its response time and its user."""
    plan = plan or request_plan()
    view = view_name(request)
    if plan.is_excluded(request, view):
        return
    if plan.per_view_metrics:
        metrics = plan.metrics_of(plan.view_label(view))
        cls = status_class(status)
        if metrics.hits:
            writes.incr(metrics.hits[cls])
        if metrics.latency is not None and elapsed_ms is not None:
            writes.record(metrics.latency, elapsed_ms)
        if metrics.counter is not None:
            writes.incr(metrics.counter)
        status_metric = metrics.status[cls]
        if status_metric is not None:
            writes.incr(status_metric)
        if metrics.timer is not None and elapsed_ms is not None:
            writes.record(metrics.timer, elapsed_ms)
    if plan.active is not None and uid is not None:
        writes.mark(plan.active, uid)


def _submit(
    request: HttpRequest, writes: Writes, status: int, started: float, response_ready: float
) -> None:
    try:
        plan = request_plan()
    except Exception:
        logger.exception("Metrics middleware could not read its settings.")
        return
    try:
        uid = loaded_user_id(request) if plan.active else None
    except Exception:
        logger.exception("Metrics middleware could not read the request's user.")
        uid = None
    try:
        elapsed_ms = (response_ready - started) * 1000
        queue_request_writes(request, writes, uid, status, elapsed_ms, plan)
        sender.submit(writes)
    except Exception:
        logger.exception("Metrics middleware could not queue this request's writes.")


class MetricsMiddleware:
    """Count each request (site-wide and per view) and mark its user; sync and async."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: GetResponse | AsyncGetResponse) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(self.get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self.__acall__(request)
        writes = attach_writes(request)
        started = time.perf_counter()
        try:
            response: HttpResponseBase = self.get_response(request)  # type: ignore[assignment]
        except BaseException:
            _submit(request, writes, 500, started, time.perf_counter())
            raise
        _submit(request, writes, response.status_code, started, time.perf_counter())
        return response

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        writes = attach_writes(request)
        started = time.perf_counter()
        try:
            response = await self.get_response(request)  # type: ignore[misc]
        except BaseException:
            _submit(request, writes, 500, started, time.perf_counter())
            raise
        # Only queues: never waits on Redis.
        _submit(request, writes, response.status_code, started, time.perf_counter())
        return response  # type: ignore[no-any-return]
