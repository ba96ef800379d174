"""Whose visit ``@mark`` records on an async view when the request carries ``request.user``
alone, as a site's own authentication middleware may set it (Django's sets ``auser`` too)."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory

from django_redis_metrics import UniqueBitmap
from django_redis_metrics.decorators import mark
from django_redis_metrics.sending import sender

pytestmark = pytest.mark.django_db


@mark("async_visitors")
async def visit(request: HttpRequest) -> HttpResponse:
    return HttpResponse("visited")


def test_an_async_view_marks_the_user_a_middleware_set_without_auser(
    single: Any, fresh_state: None, alice: Any
) -> None:
    request = RequestFactory().get("/visit/")
    request.user = alice
    assert not hasattr(request, "auser")
    assert async_to_sync(visit)(request).content == b"visited"
    sender.flush()
    assert UniqueBitmap("async_visitors").contains(alice.pk, "day")
    assert UniqueBitmap("async_visitors").count("day") == 1


def test_an_async_view_marks_nobody_on_a_request_without_a_user(
    single: Any, fresh_state: None
) -> None:
    assert async_to_sync(visit)(RequestFactory().get("/visit/")).content == b"visited"
    sender.flush()
    assert UniqueBitmap("async_visitors").count("day") == 0
