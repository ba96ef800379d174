"""A tiny shop: every page is counted by the middleware; a few views use the decorators."""

from __future__ import annotations

from django.contrib.admin.views.decorators import staff_member_required
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views import View
from django.views.decorators.http import require_POST

from django_redis_metrics.decorators import count, mark, track_event

from .metrics import COUNTRIES, FILES, PRODUCTS, buyers, downloads, orders, signups, visitors


def visitor_id(request: HttpRequest) -> str:
    """Who is browsing: the signed-in user, else the session (made on the first page)."""
    if request.user.is_authenticated:
        return f"user-{request.user.pk}"
    if request.session.session_key is None:
        request.session.save()
    return f"session-{request.session.session_key}"


def home(request: HttpRequest) -> HttpResponse:
    visitors.add(visitor_id(request), defer=True)  # never waits on Redis
    return render(request, "demo/home.html", {"products": PRODUCTS, "files": FILES})


def product(request: HttpRequest, slug: str) -> HttpResponse:
    visitors.add(visitor_id(request), defer=True)
    return render(request, "demo/product.html", {"product": slug, "countries": COUNTRIES})


@require_POST
@count(signups)
def signup(request: HttpRequest) -> HttpResponse:
    return HttpResponseRedirect(reverse("home"))


def order_fields(request: HttpRequest, response: HttpResponse) -> dict[str, str]:
    """Only what the charts need: never the whole POST body."""
    return {"country": request.POST.get("country", "")[:2].upper() or "??"}


@method_decorator(mark(buyers), name="post")
@method_decorator(
    track_event(
        orders,
        url_kwargs=["product"],
        fields=order_fields,
        user=True,
        only_if=lambda request, response: response.status_code == 302,
    ),
    name="post",
)
class Buy(View):
    def post(self, request: HttpRequest, product: str) -> HttpResponse:
        return HttpResponseRedirect(reverse("home"))


@track_event(downloads, url_kwargs=["file"])
async def download(request: HttpRequest, file: str) -> HttpResponse:
    """Only files that exist are served, and so recorded (``only_if``'s default: status below
    400): a URL value becomes an indexed value, so a made-up name must not create keys."""
    if file not in FILES:
        raise Http404("No such file.")
    response = HttpResponse(f"Contents of {file}\n", content_type="text/plain")
    response["Content-Disposition"] = "attachment"
    return response


@staff_member_required
def staff(request: HttpRequest) -> HttpResponse:
    """A staff page of the shop's own, with the admin's charts through ``{% metric_chart %}``
    (which shows them only to staff holding ``view_metrics``)."""
    return render(request, "demo/staff.html")


async def health(request: HttpRequest) -> JsonResponse:
    """Excluded from the metrics by its name (``EXCLUDE_VIEWS``)."""
    return JsonResponse({"status": "ok"})
