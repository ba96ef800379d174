"""The "Metrics" section of the admin: pages over Redis, no database table.

As django-rq does, unmanaged models give the section its entries: one per registered kind of
metric (``kinds.py``; each kind's ``Kind.admin`` names its pages), the Dashboard and the Views.
Each ``ModelAdmin`` hands its changelist to a metrics page and adds the other pages and JSON
endpoints in ``get_urls()``, all wrapped in ``admin_site.admin_view`` and the ``view_metrics``
permission check. While Redis
cannot be reached, every page answers 503 inside the admin layout and every endpoint 503 JSON,
naming the (masked) Redis address.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from django.contrib import admin
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.module_loading import import_string

from ..conf import conf
from ..core.batch import is_outage
from ..core.connection import REDIS_ERRORS, redacted
from ..core.kind import Kind
from ..kinds import registered
from ..models import AlertsMetric, DashboardMetric, FunnelMetric, ViewsMetric
from ..permissions import may_view_metrics
from . import alerts, dashboard, funnels, views
from .common import KindPages, Page, metrics_permission

#: Seconds a client is told to wait before asking again while Redis is unreachable.
RETRY_AFTER = 5


class MetricsAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    """Read-only pages; visible to active staff holding ``view_metrics``."""

    #: Extra pages (``(route, page, name suffix)``), rendered inside the admin layout.
    pages: tuple[tuple[str, Page, str], ...] = ()
    #: JSON endpoints (``(route, view, name suffix)``).
    endpoints: tuple[tuple[str, Callable[[HttpRequest], HttpResponse], str], ...] = ()

    def index_page(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        """The page shown as this entry's changelist."""
        raise NotImplementedError

    def has_module_permission(self, request: HttpRequest) -> bool:
        return may_view_metrics(request.user)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return may_view_metrics(request.user)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def url_name(self, suffix: str) -> str:
        meta = self.model._meta
        return f"{meta.app_label}_{meta.model_name}_{suffix}"

    def reverse(self, suffix: str) -> str:
        return reverse(f"{self.admin_site.name}:{self.url_name(suffix)}")

    def context(self, request: HttpRequest) -> dict[str, Any]:
        suffixes = [s for _, _, s in self.pages] + [s for _, _, s in self.endpoints]
        return {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "app_label": self.model._meta.app_label,
            "has_view_permission": True,
            "metrics_urls": {
                "index": self.reverse("changelist"),
                **{suffix: self.reverse(suffix) for suffix in suffixes},
            },
        }

    def _page(self, page: Page) -> Callable[..., HttpResponse]:
        @metrics_permission
        def view(request: HttpRequest) -> HttpResponse:
            context = self.context(request)
            try:
                return page(request, context)
            except REDIS_ERRORS as error:
                if not is_outage(error):
                    raise
                return self._unavailable_page(request, context, error)

        return self.admin_site.admin_view(view)

    def _endpoint(self, endpoint: Callable[[HttpRequest], HttpResponse]) -> Callable[..., Any]:
        @metrics_permission
        def view(request: HttpRequest) -> HttpResponse:
            try:
                return endpoint(request)
            except REDIS_ERRORS as error:
                if not is_outage(error):
                    raise
                response = JsonResponse(
                    {
                        "error": "redis_unreachable",
                        "message": f"Redis at {redacted(conf.CONNECTION)} is unreachable "
                        f"({type(error).__name__}).",
                        "retry_after": RETRY_AFTER,
                    },
                    status=503,
                )
                response["Retry-After"] = str(RETRY_AFTER)
                return response

        return self.admin_site.admin_view(view)

    def _unavailable_page(
        self, request: HttpRequest, context: dict[str, Any], error: BaseException
    ) -> HttpResponse:
        """503 inside the admin layout: which Redis (credentials masked) did not answer."""
        context.update(
            title="Metrics unavailable",
            redis_address=redacted(conf.CONNECTION),
            error_type=type(error).__name__,
        )
        response = TemplateResponse(
            request, "django_redis_metrics/admin/unavailable.html", context, status=503
        )
        response["Retry-After"] = str(RETRY_AFTER)
        return response

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        return self._page(self.index_page)(request)

    def get_urls(self) -> list[URLPattern]:
        """This section's own pages and endpoints, and its changelist: none of Django's object
        URLs (``add/``, ``<id>/change/``, ...), which would query the absent table."""
        urls = [
            path(route, self._page(page), name=self.url_name(suffix))
            for route, page, suffix in self.pages
        ]
        urls += [
            path(route, self._endpoint(view), name=self.url_name(suffix))
            for route, view, suffix in self.endpoints
        ]
        urls.append(path("", self._page(self.index_page), name=self.url_name("changelist")))
        return urls


class KindAdmin(MetricsAdmin):
    """The entry of one registered kind of metric: the pages its ``Kind.admin`` names."""

    kind_pages: ClassVar[KindPages]

    def index_page(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        return self.kind_pages.index(request, context)


def kind_admin(kind: Kind) -> type[KindAdmin] | None:
    """``kind``'s ModelAdmin (``CounterAdmin`` for ``Counter``), registered with the admin
    site; ``None`` for a kind without admin pages."""
    if kind.admin is None:
        return None
    pages = import_string(kind.admin)
    if not isinstance(pages, KindPages):
        raise TypeError(f"{kind.admin} is not a KindPages but {pages!r}.")
    attributes = {
        "__module__": __name__,
        "__doc__": f"The {kind.name} pages of the section.",
        "kind_pages": pages,
        "pages": pages.pages,
        "endpoints": pages.endpoints,
    }
    model_admin = type(f"{kind.model.__name__}Admin", (KindAdmin,), attributes)
    admin.site.register(pages.model, model_admin)
    return model_admin


#: The ModelAdmin of every registered kind with admin pages, by kind name.
KIND_ADMINS: dict[str, type[KindAdmin]] = {
    kind.name: model_admin for kind in registered() if (model_admin := kind_admin(kind)) is not None
}


@admin.register(DashboardMetric)
class DashboardAdmin(MetricsAdmin):
    """The "Dashboard" entry: the site at a glance (``dashboard.py``)."""

    def index_page(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        return dashboard.dashboard_page(request, context)


@admin.register(ViewsMetric)
class ViewsAdmin(MetricsAdmin):
    """The "Views" entry: response times and errors per view (``views.py``)."""

    def index_page(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        return views.views_page(request, context)


@admin.register(AlertsMetric)
class AlertsAdmin(MetricsAdmin):
    """The "Alerts" entry: each declared alert's state (``alerts.py``)."""

    def index_page(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        return alerts.alerts_page(request, context)


@admin.register(FunnelMetric)
class FunnelsAdmin(MetricsAdmin):
    """The "Funnels" entry: a page per funnel declared in ``metrics.py`` (``funnels.py``)."""

    pages = funnels.PAGES.pages
    endpoints = funnels.PAGES.endpoints

    def index_page(self, request: HttpRequest, context: dict[str, Any]) -> HttpResponse:
        return funnels.PAGES.index(request, context)
