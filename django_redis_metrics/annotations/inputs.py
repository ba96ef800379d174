"""Annotations as deploy scripts and CI send them: a time written as text, and a request's
body (JSON or a form) turned into ``annotate``'s arguments, with errors that say what was
wrong."""

from __future__ import annotations

import json
import math
import zoneinfo
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.http import QueryDict

from ..conf import conf

#: The fields a posted annotation may carry.
FIELDS = ("text", "when", "tags")


def parse_when(raw: str) -> float:
    """Epoch seconds (``1764140400``) or ISO 8601 (``2026-11-26T07:00:00+01:00``; without an
    offset, the site's wall-clock time in ``TIME_ZONE``), else ``ValueError``."""
    text = raw.strip()
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(number):
            raise ValueError(f"when must be a finite number of epoch seconds, not {text!r}.")
        return number
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            "when must be epoch seconds or an ISO 8601 date and time such as "
            f"2026-11-26T07:00:00+01:00, not {text[:60]!r}."
        ) from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=zoneinfo.ZoneInfo(conf.TIME_ZONE))
    return value.timestamp()


def from_json(body: bytes) -> dict[str, Any]:
    """``annotate``'s arguments from a JSON object ``{"text", "when", "tags"}``."""
    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise ValueError("The body is not valid JSON.") from None
    if not isinstance(data, Mapping):
        raise ValueError('The body must be a JSON object such as {"text": "Deploy v1.4"}.')
    unknown = sorted(str(key) for key in data if key not in FIELDS)
    if unknown:
        raise ValueError(f"Unknown fields {unknown}: an annotation has {list(FIELDS)}.")
    when = data.get("when")
    if isinstance(when, str):
        when = parse_when(when)
    elif when is not None and (isinstance(when, bool) or not isinstance(when, int | float)):
        raise ValueError("when must be epoch seconds or an ISO 8601 string.")
    return {"text": data.get("text"), "when": when, "tags": data.get("tags") or ()}


def from_form(body: bytes) -> dict[str, Any]:
    """``annotate``'s arguments from a form: ``text``, ``when``, ``tags`` (or ``tag``),
    repeated for several tags."""
    try:
        form = QueryDict(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise ValueError("The form is not UTF-8.") from None
    unknown = sorted(set(form) - {*FIELDS, "tag"})
    if unknown:
        raise ValueError(f"Unknown fields {unknown}: an annotation has {list(FIELDS)}.")
    if len(form.getlist("text")) > 1 or len(form.getlist("when")) > 1:
        raise ValueError("text and when are given once.")
    when = form.get("when")
    return {
        "text": form.get("text"),
        "when": parse_when(when) if when else None,
        "tags": [*form.getlist("tags"), *form.getlist("tag")],
    }
