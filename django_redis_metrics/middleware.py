"""``MetricsMiddleware``: hits, status classes and response times per view, and active users.

For every request that is not excluded it records, after the view has answered:

- one hit on the site-wide counter ``HITS_COUNTER`` (default ``"hits"``);
- one hit on the view's counter ``VIEW_COUNTER`` (default ``"hits:{view}"``), ``{view}`` being
  the resolved view name (``resolver_match.view_name``), never the raw path; requests that resolve
  to no view count as ``UNRESOLVED_VIEW``, and views beyond ``MAX_VIEW_COUNTERS`` as
  ``OTHER_VIEW``, so a crawler cannot create keys;
- one hit on the view's status-class counter ``VIEW_STATUS`` (default
  ``"status:{view}:{class}"``, ``{class}`` one of ``2xx 3xx 4xx 5xx``; a view that raises is
  ``5xx``);
- the response time in milliseconds (from this middleware handing the request on until the
  response comes back to it) in the view's ``Statistic`` ``VIEW_TIMER`` (default
  ``"latency:{view}"``);
- the authenticated user in the ``ACTIVE_USERS`` bitmap, when the request loaded its user
  anyway (the view, a template or another middleware read ``request.user`` or awaited
  ``request.auser()``): the middleware never loads the user itself, which would cost a session
  and a user query on every request and add ``Vary: Cookie`` to every response;
- whatever the view decorators of this request queued.

All of it goes to Redis in one pipelined round trip, sent by the process's sender thread
(:mod:`django_redis_metrics.sending.sender`): the request, sync or async, only queues its writes
and never waits on Redis. If Redis is down or slow, the request is served as if the middleware
were not there (see :mod:`django_redis_metrics.sending.failopen`).
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
from .sending import sender
from .sending.requests import attach_writes, loaded_user_id
from .sending.writes import Writes

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


class RequestPlan:
    """What the middleware records for a request, read from the settings once per change of
    them (see :func:`request_plan`), with each view's metric names filled in once (view
    labels are bounded)."""

    def __init__(self, options: Settings) -> None:
        #: The setting it was made from (the very object).
        self.raw = options.raw
        self.hits = options.HITS_COUNTER
        self.per_view = options.VIEW_COUNTER
        self.timer = options.VIEW_TIMER
        self.status = options.VIEW_STATUS
        self.active = options.ACTIVE_USERS
        self.exclude_paths = options.EXCLUDE_PATHS
        self.exclude_views = options.EXCLUDE_VIEWS
        self.unresolved_view = options.UNRESOLVED_VIEW
        self.other_view = options.OTHER_VIEW
        self.max_view_counters = options.MAX_VIEW_COUNTERS
        self.per_view_metrics = (
            self.per_view is not None or self.timer is not None or self.status is not None
        )
        self._names: dict[str, ViewMetrics] = {}

    def is_excluded(self, request: HttpRequest, view: str | None) -> bool:
        path = request.path_info  # without the script prefix, like conf.EXCLUDE_PATHS
        if path.startswith(self.exclude_paths) or is_own_view(request):
            return True
        return view is not None and _view_excluded(view, self.exclude_views)

    def view_label(self, view: str | None) -> str:
        """The ``{view}`` of a request's metrics: its resolved name, bounded (requests that
        resolve to no view fold into ``UNRESOLVED_VIEW``, views past the cap into
        ``OTHER_VIEW``)."""
        if view is None:
            return self.unresolved_view
        if not view_names.admit(view, self.max_view_counters):
            return self.other_view
        return view

    def metrics_of(self, label: str) -> ViewMetrics:
        """The names of one view's metrics, filled in on its first request."""
        names = self._names.get(label)
        if names is None:
            names = self._names[label] = ViewMetrics(
                self._filled(self.per_view, label),
                self._filled(self.timer, label),
                {cls: self._filled(self.status, label, cls) for cls in STATUS_CLASSES},
            )
        return names

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


class ViewMetrics(NamedTuple):
    counter: str | None
    timer: str | None
    status: dict[str, str | None]


STATUS_CLASSES = ("2xx", "3xx", "4xx", "5xx")

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
    if plan.hits is not None:
        writes.incr(plan.hits)
    if plan.per_view_metrics:
        metrics = plan.metrics_of(plan.view_label(view))
        if metrics.counter is not None:
            writes.incr(metrics.counter)
        status_metric = metrics.status[status_class(status)]
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
