"""The settings of the insights (annotations, funnels, alerts): declared as the others are
(``conf.py``: default, type, check id, doc line), in a table of their own that
``conf.Settings`` extends, so each part of the app declares the keys it reads."""

from __future__ import annotations

from typing import Any

from .defaults import (
    DEFAULT_ANNOTATION_COUNT,
    DEFAULT_ANNOTATION_RETENTION,
    DEFAULT_FUNNEL_MAX_EVENTS,
    alert_options,
    optional_str,
)
from .setting import PACKAGE, Setting


class InsightSettings:
    """The insights' keys of ``DJANGO_REDIS_METRICS`` (read through ``conf.Settings``)."""

    ANNOTATION_TOKEN: Setting[str | None] = Setting(
        None,
        optional_str,
        "The secret CI sends as `Authorization: Bearer <token>` to [post annotations]"
        "(annotations.md#from-ci-the-endpoint) (at least 16 characters, never `EXPORT_TOKEN`, "
        "which only reads). With `None`, the endpoint stores nothing.",
        check="E060",
        validator=f"{PACKAGE}.annotations.bounds.validate_token",
    )

    ANNOTATION_MAX_COUNT: Setting[int] = Setting(
        DEFAULT_ANNOTATION_COUNT,
        int,
        "Most [annotations](annotations.md) kept (the newest), at most 100,000; each costs its "
        "text's bytes plus about 80.",
        check="E061",
        validator=f"{PACKAGE}.annotations.bounds.validate_max_count",
    )

    ANNOTATION_MAX_LENGTH: Setting[int] = Setting(
        500,
        int,
        "Most characters of an annotation's text (at most 10,000); a longer text is refused.",
        check="E062",
        validator=f"{PACKAGE}.annotations.bounds.validate_max_length",
    )

    ANNOTATION_RETENTION: Setting[int] = Setting(
        DEFAULT_ANNOTATION_RETENTION,
        int,
        "Seconds an annotation is kept, enforced as annotations are written (at least 60, at "
        "most 100 years).",
        check="E063",
        validator=f"{PACKAGE}.annotations.bounds.validate_retention",
        shown="`31536000` (365 days)",
    )

    FUNNEL_MAX_EVENTS: Setting[int] = Setting(
        DEFAULT_FUNNEL_MAX_EVENTS,
        int,
        "Most events an ordered funnel's `counts` reads (in pages of 1,000, one round trip "
        "each); a range holding more raises a `ValueError` (see [Funnels](funnels.md)).",
        check="E065",
        validator=f"{PACKAGE}.funnels.bounds.validate_max_events",
    )

    ALERTS: Setting[Any] = Setting(
        {},
        alert_options,
        "How [alerts](alerts.md) notify: a dict of `WEBHOOK_URL`, `WEBHOOK_TIMEOUT`, "
        "`WEBHOOK_ATTEMPTS`, `WEBHOOK_BACKOFF`, `MAIL_ADMINS`, `HISTORY`, `PASS_SECONDS` "
        "([Settings](alerts.md#settings)); keys left out keep their default.",
        check="E080",
        validator=f"{PACKAGE}.alerts.options.validate_alerts",
        shown="`{}`",
    )
