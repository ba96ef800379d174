"""``MetricsMiddleware``: counts page hits per view and marks active users, in one round trip.

For every request that is not excluded it records, after the view has answered:

- one hit on the site-wide counter ``HITS_COUNTER`` (default ``"hits"``);
- one hit on the view's counter ``VIEW_COUNTER`` (default ``"hits:{view}"``), ``{view}`` being
  the resolved view name (``resolver_match.view_name``), never the raw path; requests that resolve
  to no view count as ``UNRESOLVED_VIEW``, and views beyond ``MAX_VIEW_COUNTERS`` as
  ``OTHER_VIEW``, so a crawler cannot create keys;
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
from collections.abc import Awaitable, Callable
from fnmatch import fnmatchcase
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

from .conf import conf
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


def is_excluded(request: HttpRequest, view: str | None) -> bool:
    path = request.path_info  # without the script prefix, like conf.EXCLUDE_PATHS
    if any(path.startswith(prefix) for prefix in conf.EXCLUDE_PATHS):
        return True
    return view is not None and any(fnmatchcase(view, p) for p in conf.EXCLUDE_VIEWS)


def counter_name_for(view: str | None) -> str | None:
    """The name of the per-view counter of ``view`` (bounded: unresolved and overflow fold)."""
    template = conf.VIEW_COUNTER
    if template is None:
        return None
    label = conf.UNRESOLVED_VIEW if view is None else view
    if view is not None and not view_names.admit(view, conf.MAX_VIEW_COUNTERS):
        label = conf.OTHER_VIEW
    name = template.replace("{view}", label)
    try:
        return validate_name(name)
    except (TypeError, ValueError):
        return template.replace("{view}", conf.OTHER_VIEW)


def queue_request_writes(request: HttpRequest, writes: Writes, uid: Any = None) -> None:
    """Queue what the middleware records for ``request`` (nothing if it is excluded)."""
    view = view_name(request)
    if is_excluded(request, view):
        return
    hits = conf.HITS_COUNTER
    if hits is not None:
        writes.incr(hits)
    per_view = counter_name_for(view)
    if per_view is not None:
        writes.incr(per_view)
    active = conf.ACTIVE_USERS
    if active is not None and uid is not None:
        writes.mark(active, uid)


def _submit(request: HttpRequest, writes: Writes, uid: Any) -> None:
    try:
        queue_request_writes(request, writes, uid)
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
        response = self.get_response(request)
        try:
            uid = loaded_user_id(request) if conf.ACTIVE_USERS else None
        except Exception:
            logger.exception("Metrics middleware could not read the request's user.")
            uid = None
        _submit(request, writes, uid)
        return response

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        writes = attach_writes(request)
        response = await self.get_response(request)  # type: ignore[misc]
        try:
            uid = loaded_user_id(request) if conf.ACTIVE_USERS else None
        except Exception:
            logger.exception("Metrics middleware could not read the request's user.")
            uid = None
        _submit(request, writes, uid)  # only queues: never waits on Redis
        return response  # type: ignore[no-any-return]
