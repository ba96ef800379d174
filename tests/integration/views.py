"""Views for the Django integration tests: sync, async and class-based."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import View


def sync_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("sync")


async def async_view(request: HttpRequest) -> HttpResponse:
    return HttpResponse("async")


def health(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def article(request: HttpRequest, slug: str) -> HttpResponse:
    return HttpResponse(f"article {slug}")


class ClassView(View):
    def get(self, request: HttpRequest) -> HttpResponse:
        return JsonResponse({"view": "class"})
