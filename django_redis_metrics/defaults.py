"""The settings' default values and the converters that type what a site wrote (``conf.py``
declares each key with them)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from django.conf import settings

#: Most series one labelled metric keeps by default (``MAX_SERIES``).
DEFAULT_MAX_SERIES = 1000
#: Most events one ordered funnel reads (``FUNNEL_MAX_EVENTS``).
DEFAULT_FUNNEL_MAX_EVENTS = 100_000
DEFAULT_CONNECTION = "redis://127.0.0.1:6379/0"
DEFAULT_PRECISIONS: tuple[int, ...] = (1, 5, 60, 300, 3600, 18000, 86400)
DEFAULT_SAMPLES = 120
#: A Statistic's default precisions: minutes, 5 minutes, hours and days (a slice of a statistic
#: costs up to about 1 KB, a counter's 7 bytes, hence no 1 s slices by default).
DEFAULT_STATISTIC_PRECISIONS: tuple[int, ...] = (60, 300, 3600, 86400)
#: Periods of each kind a UniqueBitmap keeps, counting the current one: 2 days of hours, about
#: 3 months of days, 2 years of ISO weeks, 5 years of months.
DEFAULT_BITMAP_RETENTION: dict[str, int] = {"hour": 48, "day": 92, "week": 105, "month": 60}
DEFAULT_EVENT_RETENTION = 30 * 86400
#: Seconds annotations are kept (a year), and how many of the newest are kept at most.
DEFAULT_ANNOTATION_RETENTION = 365 * 86400
DEFAULT_ANNOTATION_COUNT = 1000
#: Periods of each kind a UniqueEstimate keeps, counting the current one (as for bitmaps).
DEFAULT_ESTIMATE_RETENTION: dict[str, int] = {"hour": 48, "day": 92, "week": 105, "month": 60}
#: View names (``fnmatch`` patterns) the middleware does not count: the admin, health checks.
DEFAULT_EXCLUDE_VIEWS: tuple[str, ...] = (
    "admin:*",
    "health",
    "healthz",
    "health_check",
    "health_check:*",
    "ping",
)
#: Paths always skipped when ``EXCLUDE_PATHS`` is unset, besides ``STATIC_URL`` and ``MEDIA_URL``.
DEFAULT_EXCLUDE_PATHS: tuple[str, ...] = ("/favicon.ico", "/robots.txt")
#: The dashboard's tiles, in order (names of ``admin/tiles.py``'s tiles, dotted paths of Tile
#: classes, or ``{"tile": name, **options}``).
DEFAULT_DASHBOARD: tuple[str, ...] = (
    "hits",
    "active_users",
    "top_views",
    "errors",
    "slowest_views",
    "events",
)


def time_zone(value: Any) -> str:
    return str(value or getattr(settings, "TIME_ZONE", None) or "UTC")


def ints(value: Iterable[int]) -> tuple[int, ...]:
    return tuple(value)


def strs(value: Iterable[Any]) -> tuple[str, ...]:
    return tuple(str(item) for item in value)


def optional_str(value: Any) -> str | None:
    return None if value is None else str(value)


def alert_options(value: Any) -> Any:
    """``ALERTS`` typed (``alerts/options.py``, imported late: it reads the core)."""
    from .alerts.options import AlertOptions

    return AlertOptions.of(value)


def as_is(value: Any) -> Any:
    """Validated where it is used (and by the system check)."""
    return value


def bitmap_retention(value: Mapping[str, int]) -> dict[str, int]:
    return {**DEFAULT_BITMAP_RETENTION, **value}


def estimate_retention(value: Mapping[str, int]) -> dict[str, int]:
    return {**DEFAULT_ESTIMATE_RETENTION, **value}


def exclude_paths(value: Iterable[Any] | None) -> tuple[str, ...]:
    if value is not None:
        return strs(value)
    from django.urls import get_script_prefix

    urls = (getattr(settings, "STATIC_URL", None), getattr(settings, "MEDIA_URL", None))
    return _default_exclude_paths(get_script_prefix(), *(str(url or "") for url in urls))


@lru_cache(maxsize=64)
def _default_exclude_paths(script_prefix: str, *urls: str) -> tuple[str, ...]:
    """``EXCLUDE_PATHS``'s default for these ``STATIC_URL`` and ``MEDIA_URL`` under
    ``script_prefix`` ("/sub/" when the site is served under a sub-path)."""
    found = []
    for url in urls:
        # Django puts the script prefix in front of a relative STATIC_URL; paths are
        # compared with request.path_info, which does not hold it.
        if script_prefix != "/" and url.startswith(script_prefix):
            url = url[len(script_prefix) - 1 :]
        # An unset MEDIA_URL reads as "/" (Django adds the script prefix): never exclude all.
        if url.strip("/") and "://" not in url:
            found.append("/" + url.lstrip("/"))
    return (*found, *DEFAULT_EXCLUDE_PATHS)
