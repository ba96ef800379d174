"""The integration URLs plus views that read the request's user (sync and async)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import path

from .urls import urlpatterns as base_urlpatterns


def whoami(request: HttpRequest) -> HttpResponse:
    return HttpResponse(request.user.get_username() or "anonymous")


async def awhoami(request: HttpRequest) -> HttpResponse:
    user = await request.auser()
    return HttpResponse(user.get_username() or "anonymous")


urlpatterns = [
    *base_urlpatterns,
    path("whoami/", whoami, name="whoami"),
    path("awhoami/", awhoami, name="awhoami"),
]
