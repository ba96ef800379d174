"""The endpoint CI posts annotations to: ``POST <metrics url>annotations/``.

A token API: ``Authorization: Bearer <ANNOTATION_TOKEN>`` is the only way in (no session, so
no CSRF token is asked for). The read token ``EXPORT_TOKEN`` is refused (403), a missing or
wrong token is a 401, and with no ``ANNOTATION_TOKEN`` set nothing is stored. The body is JSON
or a form, at most ``MAX_BODY`` bytes; bad input is a 400 saying what was wrong, and stores
nothing.
"""

from __future__ import annotations

import hmac

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from ..conf import conf
from ..core.connection import REDIS_ERRORS
from ..exceptions import MetricsRefused
from .inputs import from_form, from_json
from .store import annotate

#: Most bytes of a request's body: a text of ``ANNOTATION_MAX_LENGTH`` (at most 10,000
#: characters) JSON-escaped, and its tags, fit.
MAX_BODY = 64 * 1024


@csrf_exempt
def annotate_endpoint(request: HttpRequest) -> JsonResponse:
    """Store the posted annotation: 201 with it as ``annotations()`` gives it back."""
    if request.method != "POST":
        response = error(405, "POST an annotation here.")
        response["Allow"] = "POST"
        return response
    refused = refusal(request)
    if refused is not None:
        return refused
    try:
        size = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        return error(400, "Content-Length is not a number.")
    if size > MAX_BODY:
        return error(413, f"The body is {size} bytes; at most {MAX_BODY} are read.")
    body = request.read(MAX_BODY + 1)
    if len(body) > MAX_BODY:
        return error(413, f"The body is over {MAX_BODY} bytes.")
    content_type = request.content_type or ""
    try:
        if content_type == "application/json":
            arguments = from_json(body)
        elif content_type == "application/x-www-form-urlencoded":
            arguments = from_form(body)
        else:
            return error(415, "Send application/json or application/x-www-form-urlencoded.")
        stored = annotate(**arguments)
    except (TypeError, ValueError, MetricsRefused) as exc:
        return error(400, str(exc))
    except REDIS_ERRORS:
        return error(503, "Redis is unreachable: nothing was stored.")
    return JsonResponse(stored, status=201)


def refusal(request: HttpRequest) -> JsonResponse | None:
    """``None`` if ``request`` carries ``Authorization: Bearer <ANNOTATION_TOKEN>``; else a
    403 for the read token, a 401 for anything else."""
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    given = credentials.strip().encode()
    if scheme.lower() != "bearer" or not given:
        return unauthorized("Bearer", "Send Authorization: Bearer <ANNOTATION_TOKEN>.")
    read_token = conf.EXPORT_TOKEN
    if read_token and hmac.compare_digest(given, read_token.encode()):
        return error(403, "EXPORT_TOKEN only reads: annotations take ANNOTATION_TOKEN.")
    token = conf.ANNOTATION_TOKEN
    if token is None:
        return unauthorized(
            'Bearer error="invalid_token"', "ANNOTATION_TOKEN is not set: nothing is stored."
        )
    if not hmac.compare_digest(given, token.encode()):
        return unauthorized('Bearer error="invalid_token"', "The token is not ANNOTATION_TOKEN.")
    return None


def error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def unauthorized(challenge: str, message: str) -> JsonResponse:
    response = error(401, message)
    response["WWW-Authenticate"] = challenge
    return response
