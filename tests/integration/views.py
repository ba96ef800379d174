"""Views for the Django integration tests: sync, async and class-based."""

from __future__ import annotations

import asyncio
import time

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.decorators import method_decorator
from django.views import View

from django_redis_metrics import Counter, EventSeries, UniqueBitmap
from django_redis_metrics.decorators import count, mark, track_event

#: Declared metrics, as a site's metrics.py declares them: the decorators use their configuration.
minutely_signups = Counter("minutely_signups", precisions=[60, 3600])
hourly_visitors = UniqueBitmap("hourly_visitors", periods=("hour", "day"))
short_orders = EventSeries("short_orders", index=["country"], retention=3600)


#: Metrics written from view code with defer=True (README's examples).
deferred_signups = Counter("deferred_signups", precisions=[60])
deferred_orders = EventSeries("deferred_orders", index=["product"])
deferred_buyers = UniqueBitmap("deferred_buyers", periods=("day",))


def deferred(request: HttpRequest) -> HttpResponse:
    """Records three metrics fire-and-forget: the request never waits on Redis."""
    deferred_signups.incr(defer=True)
    deferred_orders.record(defer=True, product=request.GET.get("product", "book"))
    deferred_buyers.mark(int(request.GET.get("user", "1")), defer=True)
    return HttpResponse("ordered")


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


# Decorated views


@count("signups")
def signup(request: HttpRequest) -> HttpResponse:
    if request.method == "POST" and request.POST.get("fail"):
        return HttpResponse("invalid", status=400)
    return HttpResponse("welcome")


@count("uploads", amount=lambda request, response: int(response["X-Files"]))
async def upload(request: HttpRequest) -> HttpResponse:
    response = HttpResponse("stored")
    response["X-Files"] = "3"
    return response


@method_decorator(count("checkouts"), name="post")
class Checkout(View):
    def get(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse("form")

    def post(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse("paid")


@method_decorator(count("async_checkouts"), name="post")
class AsyncCheckout(View):
    async def post(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse("paid")


@track_event("downloads", index=["file"], url_kwargs=["file"], user=True)
def download(request: HttpRequest, file: str) -> HttpResponse:
    return HttpResponse(f"file {file}")


@track_event("searches", fields=lambda request, response: {"q": request.GET.get("q", "")[:50]})
async def search(request: HttpRequest) -> HttpResponse:
    return HttpResponse("results")


@track_event("logins")
def login_form(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


@mark("buyers")
def buy(request: HttpRequest) -> HttpResponse:
    return HttpResponse("bought")


@mark("async_buyers")
async def async_buy(request: HttpRequest) -> HttpResponse:
    return HttpResponse("bought")


def subscriber_id(request: HttpRequest, response: HttpResponse) -> int | None:
    raw = request.GET.get("id", "")
    return int(raw) if raw.isdigit() else None


@method_decorator(mark("subscribers", user=subscriber_id), name="get")
class Subscribe(View):
    def get(self, request: HttpRequest) -> HttpResponse:
        return HttpResponse("subscribed")


@count("clicks")
def click(request: HttpRequest) -> HttpResponse:
    return HttpResponse("clicked")


@count(minutely_signups)
@mark(hourly_visitors, user=lambda request, response: 7)
@track_event(short_orders, fields=lambda request, response: {"country": "FR"})
def declared(request: HttpRequest) -> HttpResponse:
    return HttpResponse("declared")


# Views answering each status class, for the middleware's VIEW_STATUS and VIEW_TIMER


def missing(request: HttpRequest) -> HttpResponse:
    return HttpResponse("gone", status=404)


def moved(request: HttpRequest) -> HttpResponse:
    return HttpResponse(status=302, headers={"Location": "/sync/"})


def broken(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("the view failed")


async def async_broken(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("the async view failed")


def slow(request: HttpRequest) -> HttpResponse:
    time.sleep(float(request.GET.get("seconds", "0.05")))
    return HttpResponse("slow")


async def async_slow(request: HttpRequest) -> HttpResponse:
    await asyncio.sleep(float(request.GET.get("seconds", "0.05")))
    return HttpResponse("slow")
