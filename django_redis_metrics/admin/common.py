"""What every admin page shares: the permission check, the clock, names and labels, paging.

Every view of this package is reached only through the URLs of ``options.py``, which wrap it in
``admin_site.admin_view`` (active staff, else the login page) and :func:`metrics_permission`
(the ``view_metrics`` permission, else 403). Metric names travel in query strings (``?name=``),
so any name works, and reach the page through autoescaped templates or ``json_script``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.core.exceptions import PermissionDenied
from django.core.paginator import Page as PaginatorPage
from django.core.paginator import Paginator
from django.db import models
from django.http import Http404, HttpRequest, HttpResponse

from ..conf import conf
from ..core.catalogue import validate_member
from ..core.keys import to_str
from ..core.labels.labelling import OTHER, split
from ..core.queries.queryset import MetricQuerySet
from ..permissions import may_view_metrics

ViewFunction = Callable[..., HttpResponse]
#: A page rendered inside the admin layout: the request, and the context every page shares.
Page = Callable[[HttpRequest, dict[str, Any]], HttpResponse]


@dataclass(frozen=True)
class KindPages:
    """The admin entry of one kind of metric, which its registry entry names (``Kind.admin``):
    ``options.py`` makes it a ``ModelAdmin`` of the section."""

    #: The unmanaged model (``models.py``) that gives the kind its entry in the section.
    model: type[models.Model]
    #: The entry's changelist: the list of the kind's metrics.
    index: Page
    #: Other pages, ``(route, page, URL name suffix)``.
    pages: tuple[tuple[str, Page, str], ...] = ()
    #: JSON endpoints, ``(route, view, URL name suffix)``.
    endpoints: tuple[tuple[str, Callable[[HttpRequest], HttpResponse], str], ...] = ()


def current_time() -> float:
    """Now, in epoch seconds (one place, so that tests can hold the clock still)."""
    return time.time()


def metrics_permission(view: ViewFunction) -> ViewFunction:
    """Refuse users without the ``view_metrics`` permission (superusers have it)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not may_view_metrics(getattr(request, "user", None)):
            raise PermissionDenied("You may not view metrics.")
        return view(request, *args, **kwargs)

    return wrapper


def refresh_seconds(precision: int) -> int:
    """How often a live chart asks for new data: every few seconds, never faster than 1 s."""
    return 2 if precision < 5 else 5


def label(seconds: int) -> str:
    """``60`` -> ``"1 min"``: a precision or window for people."""
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size} {unit}"
    return f"{seconds} s"


def name_param(request: HttpRequest) -> str:
    """``?name=``: a metric's name, or a series' (``core/labels/labelling.py``)."""
    name = request.GET.get("name", "")
    try:
        return validate_member(name)
    except (TypeError, ValueError) as exc:
        raise Http404(str(exc)) from exc


def as_int(value: Any) -> int:
    return 0 if value is None else int(to_str(value))


def listing_page(
    request: HttpRequest, queryset: MetricQuerySet[Any]
) -> tuple[PaginatorPage[Any], str, int]:
    """(the page of ``queryset`` asked for by ``?p=``, the search, how many rows match),
    ``ADMIN_PAGE_SIZE`` rows a page, in name order (``?o=-name`` descending).

    Without a search, a page costs one ``ZRANGEBYLEX ... LIMIT`` and one ``ZCARD``-like count
    (O(log N + page), whatever the number of metrics): this is the common case. ``?q=text``
    lists the names holding ``text`` (ignoring case, as the admin's search always did): every
    catalogue member is read (10,000 a round trip) and tested, once per page view; ``?q=^text``
    lists the names starting with ``text``, at the cost of a page again.
    """
    query = request.GET.get("q", "").strip()
    order = "-name" if request.GET.get("o") == "-name" else "name"
    selected = queryset.order_by(order)
    try:
        if query.startswith("^") and query[1:]:
            selected = selected.filter(name__startswith=query[1:])
        elif query:
            selected = selected.filter(name__icontains=query)
    except (TypeError, ValueError):  # a search no name can hold: nothing matches
        return Paginator([], conf.ADMIN_PAGE_SIZE).get_page(1), query, 0
    # A search within names reads the names once (the count), then builds the page's rows.
    paginator = Paginator(selected, conf.ADMIN_PAGE_SIZE)
    page = paginator.get_page(request.GET.get("p"))
    return page, query, paginator.count


def series_label(name: str) -> str:
    """A catalogue member for people: ``hits{view=home, status=2xx}`` for a series."""
    found = split(name)
    if found.other:
        return f"{found.name}{{{OTHER}}}"
    if not found.labels:
        return name
    return f"{found.name}{{{', '.join(f'{k}={v}' for k, v in found.labels)}}}"


def with_query(url: str, **params: Any) -> str:
    return f"{url}?{urlencode(params)}"
