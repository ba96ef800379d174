"""Views that hand the decorators and the middleware int subclasses (``IntEnum``,
``IntegerChoices``, an ``int``-mixin ``Enum``) where ints are expected."""

from __future__ import annotations

import enum
from types import SimpleNamespace

from django.db.models import IntegerChoices
from django.http import HttpRequest, HttpResponse
from django.urls import path

from django_redis_metrics.decorators import count, mark, track_event


class Level(enum.IntEnum):
    GOLD = 3


class Plan(IntegerChoices):
    PRO = 5, "Pro"


class Mode(int, enum.Enum):  # str() of a member is "Mode.FAST", not its number
    FAST = 7


@count("enum_hits", amount=lambda request, response: Level.GOLD)
@mark("enum_buyers", user=lambda request, response: Plan.PRO)
@track_event(
    "enum_events",
    index=["level", "mode"],
    fields=lambda request, response: {"level": Level.GOLD, "mode": Mode.FAST},
)
def decorated(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def member(request: HttpRequest) -> HttpResponse:
    """A user whose pk is an IntegerChoices member, as a custom user model may have."""
    request.user = SimpleNamespace(pk=Plan.PRO, is_authenticated=True)  # type: ignore[assignment]
    return HttpResponse("hello")


urlpatterns = [
    path("decorated/", decorated, name="decorated"),
    path("member/", member, name="member"),
]
