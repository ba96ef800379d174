"""The scrape endpoint: closed by default, a bearer token or a permitted staff user opens it."""

from __future__ import annotations

import hmac

from django.http import HttpRequest, HttpResponse
from prometheus_client import CollectorRegistry
from prometheus_client.exposition import choose_encoder

from ..conf import conf
from ..core.connection import REDIS_ERRORS
from ..permissions import may_view_metrics
from .collector import MetricsCollector, collection_paused


def refusal(request: HttpRequest) -> HttpResponse | None:
    """``None`` if ``request`` may scrape: it carries ``Authorization: Bearer <EXPORT_TOKEN>``,
    or comes from an active staff user with the ``view_metrics`` permission. Else a 401 (no or
    wrong credentials) or a 403 (a signed-in user without the permission)."""
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        token = conf.EXPORT_TOKEN
        if token and hmac.compare_digest(credentials.strip().encode(), token.encode()):
            return None
        return unauthorized('Bearer error="invalid_token"')
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        if may_view_metrics(user):
            return None
        return HttpResponse("The view_metrics permission is required.", status=403)
    return unauthorized("Bearer")


def unauthorized(challenge: str) -> HttpResponse:
    response = HttpResponse("A bearer token or a staff user is required.", status=401)
    response["WWW-Authenticate"] = challenge
    return response


def prometheus(request: HttpRequest) -> HttpResponse:
    """Every metric, in the format the scraper asks for (OpenMetrics or the text format)."""
    refused = refusal(request)
    if refused is not None:
        return refused
    try:
        body, content_type = render(request.headers.get("Accept", ""))
    except REDIS_ERRORS:
        return HttpResponse("Redis is unreachable.", status=503)
    response = HttpResponse(body, content_type=content_type)
    response["Cache-Control"] = "no-store"
    return response


def render(accept: str) -> tuple[bytes, str]:
    """Every metric in the format ``accept`` (an ``Accept`` header) asks for, and its content
    type: the endpoint's work, HTTP aside (``bench_exposition_series.py`` times it)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(MetricsCollector())
    encoder, content_type = choose_encoder(accept)
    with collection_paused():  # until the families are rendered, then freed
        return encoder(registry), content_type
