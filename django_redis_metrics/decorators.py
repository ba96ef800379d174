"""View decorators: count hits, mark users and record events from a view, failing open.

>>> @count("signups", only_if=lambda request, response: response.status_code == 302)
... def signup(request): ...

>>> @track_event("downloads", index=["file"], url_kwargs=["file"])
... async def download(request, file): ...

>>> @method_decorator(mark("buyers"), name="post")
... class Checkout(View): ...

They record only what they are told to: ``track_event`` stores the view's name and no field of
the request unless ``fields``, ``url_kwargs`` or ``user`` ask for it, so no password, token or
body is ever stored by default. The writes are made after the view answered, only for
responses ``only_if`` accepts (by default: status below 400), and join the request's single
round trip when ``MetricsMiddleware`` is installed (else they are sent on their own). Like the
middleware they never slow down or break the view: see :mod:`django_redis_metrics.sending.failopen`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from asgiref.sync import iscoroutinefunction
from django.http import HttpRequest, HttpResponseBase

from .bitmaps import UniqueBitmap
from .conf import conf
from .core.batch import Batch
from .core.keys import validate_name
from .counter import Counter
from .events import EventSeries
from .sending import sender
from .sending.requests import auser_id, request_writes, user_id
from .sending.writes import Writes

logger = logging.getLogger("django_redis_metrics")

View = TypeVar("View", bound=Callable[..., Any])
Check = Callable[[HttpRequest, HttpResponseBase], bool]
UserOf = Callable[[HttpRequest, HttpResponseBase], Any]
FieldsOf = Callable[[HttpRequest, HttpResponseBase], Mapping[str, Any]]

#: Field name under which ``track_event(user=True)`` stores the user id.
USER_FIELD = "user"
#: Field every event of ``track_event`` holds: the resolved view name (from the URLconf, bounded).
VIEW_FIELD = "view"


def _view_label(request: HttpRequest) -> str:
    """The request's resolved view name, or ``UNRESOLVED_VIEW`` (as the middleware names it)."""
    match = getattr(request, "resolver_match", None)
    return (match.view_name if match is not None else "") or conf.UNRESOLVED_VIEW


def succeeded(request: HttpRequest, response: HttpResponseBase) -> bool:
    """The default ``only_if``: the view answered with a status below 400."""
    return response.status_code < 400


class _Call:
    """What a decorator sees of one view call."""

    def __init__(
        self, request: HttpRequest, response: HttpResponseBase, kwargs: dict[str, Any], uid: Any
    ) -> None:
        self.request = request
        self.response = response
        self.kwargs = kwargs
        self.user_id = uid
        self.when = time.time()


Recorder = Callable[[_Call, Writes], None]


def _decorator(record: Recorder, only_if: Check, needs_user: bool) -> Callable[[View], View]:
    """Wrap sync or async views so that ``record`` runs after them, failing open."""

    def decorate(view: View) -> View:
        if iscoroutinefunction(view):

            @functools.wraps(view)
            async def async_wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                response = await view(request, *args, **kwargs)
                try:
                    if only_if(request, response):
                        uid = await auser_id(request) if needs_user else None
                        _record(record, _Call(request, response, kwargs, uid))
                except Exception:
                    logger.exception("A metrics decorator failed; the view's answer is kept.")
                return response

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            response = view(request, *args, **kwargs)
            try:
                if only_if(request, response):
                    uid = user_id(getattr(request, "user", None)) if needs_user else None
                    _record(record, _Call(request, response, kwargs, uid))
            except Exception:
                logger.exception("A metrics decorator failed; the view's answer is kept.")
            return response

        return wrapper  # type: ignore[return-value]

    return decorate


def _record(record: Recorder, call: _Call) -> None:
    shared = request_writes(call.request)
    writes = shared if shared is not None else Writes()
    record(call, writes)
    if shared is None:
        sender.submit(writes, call.when)


Metric = TypeVar("Metric", Counter, UniqueBitmap, EventSeries)


def _metric(metric: str | Metric, model: type[Metric], label: str) -> str | Metric:
    """A declared metric of the decorator's model, or a valid name (checked when decorating)."""
    return metric if isinstance(metric, model) else _name(metric, model, label)


def _name(metric: object, model: type, label: str) -> str:
    if isinstance(metric, Counter | UniqueBitmap | EventSeries):
        raise TypeError(f"Expected a {model.__name__} or a {label} name, not {metric!r}.")
    return validate_name(metric, f"{label} name")


def _series(series: str | EventSeries, index: Sequence[str] | None) -> EventSeries:
    if not isinstance(series, EventSeries):
        return EventSeries(_name(series, EventSeries, "event series"), index=index or ())
    if index is not None:
        raise TypeError(
            f"track_event({series!r}, index=...): a declared EventSeries brings its own index; "
            "declare it there."
        )
    return series


def count(
    counter: str | Counter,
    *,
    amount: int | Callable[[HttpRequest, HttpResponseBase], int] = 1,
    only_if: Check = succeeded,
) -> Callable[[View], View]:
    """Add ``amount`` (an int, or a callable of request and response) to ``counter``: a
    declared ``Counter`` (its precisions are used) or a name (the default precisions)."""
    counter = _metric(counter, Counter, "counter")

    def record(call: _Call, writes: Writes) -> None:
        value = amount(call.request, call.response) if callable(amount) else amount
        if value:
            writes.incr(counter, int(value))

    return _decorator(record, only_if, needs_user=False)


def mark(
    bitmap: str | UniqueBitmap,
    *,
    user: UserOf | None = None,
    only_if: Check = succeeded,
) -> Callable[[View], View]:
    """Mark a user in ``bitmap`` (a declared ``UniqueBitmap``, whose periods are used, or a
    name): the authenticated user by default, or the id ``user(request, response)`` returns
    (``None``: nobody to mark)."""
    bitmap = _metric(bitmap, UniqueBitmap, "bitmap")

    def record(call: _Call, writes: Writes) -> None:
        uid = user(call.request, call.response) if user is not None else call.user_id
        if uid is not None:
            writes.mark(bitmap, uid, call.when)

    return _decorator(record, only_if, needs_user=user is None)


def track_event(
    series: str | EventSeries,
    *,
    index: Sequence[str] | None = None,
    fields: FieldsOf | None = None,
    url_kwargs: Sequence[str] = (),
    user: bool | UserOf = False,
    only_if: Check = succeeded,
) -> Callable[[View], View]:
    """Record one event per view call in ``series``: a declared ``EventSeries`` (its index,
    retention and value cap are used) or a name (indexed by ``index``, default settings).

    The event holds only: the resolved view name under ``"view"``, the URL keyword arguments
    named in ``url_kwargs``, the fields ``fields(request, response)`` returns, and with ``user``
    the user id (``True``: the authenticated user's pk; a callable: its result) under
    ``"user"``.
    """
    series = _series(series, index)
    name = series.name
    url_kwargs = tuple(url_kwargs)

    def record(call: _Call, writes: Writes) -> None:
        values: dict[str, Any] = {VIEW_FIELD: _view_label(call.request)}
        values.update((key, call.kwargs[key]) for key in url_kwargs if key in call.kwargs)
        if fields is not None:
            values.update(fields(call.request, call.response))
        if callable(user):
            uid = user(call.request, call.response)
        else:
            uid = call.user_id if user else None
        if uid is not None:
            values[USER_FIELD] = uid
        when = call.when

        def write(batch: Batch) -> None:
            series.record(when=when, batch=batch, **values)

        writes.defer(write, name)

    return _decorator(record, only_if, needs_user=user is True)
