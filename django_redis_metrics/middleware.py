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
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

from .conf import Settings, conf
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


def view_name(request: HttpRequest) -> str | None:
    """The resolved view name of ``request``, or ``None`` when it resolved to no view."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return None
    return match.view_name or None


def is_excluded(request: HttpRequest, view: str | None, options: Settings = conf) -> bool:
    path = request.path_info  # without the script prefix, like conf.EXCLUDE_PATHS
    if path.startswith(options.EXCLUDE_PATHS):
        return True
    return view is not None and _view_excluded(view, options.EXCLUDE_VIEWS)


@lru_cache(maxsize=4096)
def _view_excluded(view: str, patterns: tuple[str, ...]) -> bool:
    """Whether ``view`` matches one of ``patterns`` (remembered: view names are few)."""
    return any(fnmatchcase(view, pattern) for pattern in patterns)


def view_label(view: str | None, options: Settings = conf) -> str:
    """The ``{view}`` of a request's metrics: its resolved name, bounded (requests that resolve
    to no view fold into ``UNRESOLVED_VIEW``, views past the cap into ``OTHER_VIEW``)."""
    if view is None:
        return options.UNRESOLVED_VIEW
    if not view_names.admit(view, options.MAX_VIEW_COUNTERS):
        return options.OTHER_VIEW
    return view


def metric_name(template: str, label: str, status_class: str = "", options: Settings = conf) -> str:
    """``template`` filled in for one view; a view name that cannot name a metric folds into
    ``OTHER_VIEW``."""
    return _filled(template, label, status_class, options.OTHER_VIEW)


@lru_cache(maxsize=8192)
def _filled(template: str, label: str, status_class: str, other: str) -> str:
    """``metric_name``, remembered: labels are bounded (resolved view names, capped)."""
    name = template.replace("{class}", status_class)
    try:
        return validate_name(name.replace("{view}", label))
    except (TypeError, ValueError):
        return name.replace("{view}", other)


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
) -> None:
    """Queue what the middleware records for ``request`` (nothing if it is excluded): its hits,
    its status class, its response time and its user."""
    options = conf.snapshot()  # the settings read once for the whole request
    view = view_name(request)
    if is_excluded(request, view, options):
        return
    hits = options.HITS_COUNTER
    if hits is not None:
        writes.incr(hits)
    per_view, timer, status_template = options.VIEW_COUNTER, options.VIEW_TIMER, options.VIEW_STATUS
    if per_view is not None or timer is not None or status_template is not None:
        label = view_label(view, options)
        if per_view is not None:
            writes.incr(metric_name(per_view, label, options=options))
        if status_template is not None:
            cls = status_class(status)
            writes.incr(metric_name(status_template, label, cls, options))
        if timer is not None and elapsed_ms is not None:
            writes.record(metric_name(timer, label, options=options), elapsed_ms)
    active = options.ACTIVE_USERS
    if active is not None and uid is not None:
        writes.mark(active, uid)


def _submit(
    request: HttpRequest, writes: Writes, status: int, started: float, response_ready: float
) -> None:
    try:
        uid = loaded_user_id(request) if conf.ACTIVE_USERS else None
    except Exception:
        logger.exception("Metrics middleware could not read the request's user.")
        uid = None
    try:
        elapsed_ms = (response_ready - started) * 1000
        queue_request_writes(request, writes, uid, status, elapsed_ms)
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
