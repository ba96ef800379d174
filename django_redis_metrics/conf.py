"""The app's settings, read from ``settings.DJANGO_REDIS_METRICS`` on every access.

Nothing is cached at import time, so ``override_settings`` and pytest-django's ``settings``
fixture take effect immediately.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from django.conf import settings

SETTING_NAME = "DJANGO_REDIS_METRICS"

DEFAULT_PRECISIONS: tuple[int, ...] = (1, 5, 60, 300, 3600, 18000, 86400)
DEFAULT_SAMPLES = 120
#: A Statistic's default precisions: minutes, 5 minutes, hours and days (a slice of a statistic
#: costs up to about 1 KB, a counter's 7 bytes, hence no 1 s slices by default).
DEFAULT_STATISTIC_PRECISIONS: tuple[int, ...] = (60, 300, 3600, 86400)
#: Periods of each kind a UniqueBitmap keeps, counting the current one: 2 days of hours, about
#: 3 months of days, 2 years of ISO weeks, 5 years of months.
DEFAULT_BITMAP_RETENTION: dict[str, int] = {"hour": 48, "day": 92, "week": 105, "month": 60}
DEFAULT_EVENT_RETENTION = 30 * 86400
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

#: Every key the app understands, with its default. ``checks.py`` warns about any other key.
DEFAULTS: dict[str, Any] = {
    "CONNECTION": "redis://127.0.0.1:6379/0",
    "CLUSTER": False,
    "PREFIX": "metrics",
    "TIME_ZONE": None,
    "SOCKET_TIMEOUT": 5.0,
    "SOCKET_CONNECT_TIMEOUT": 2.0,
    "COUNTER_PRECISIONS": DEFAULT_PRECISIONS,
    "COUNTER_SAMPLES": DEFAULT_SAMPLES,
    "STATISTIC_PRECISIONS": DEFAULT_STATISTIC_PRECISIONS,
    "STATISTIC_SAMPLES": DEFAULT_SAMPLES,
    "BITMAP_RETENTION": DEFAULT_BITMAP_RETENTION,
    "BITMAP_CACHE_TTL": 86400,
    "MAX_USER_ID": 2**27 - 1,
    "EVENT_RETENTION": DEFAULT_EVENT_RETENTION,
    "EVENT_MAX_VALUES": 1000,
    "ESTIMATE_RETENTION": DEFAULT_ESTIMATE_RETENTION,
    # Django integration (middleware.py, decorators.py, sending/)
    "HITS_COUNTER": "hits",
    "VIEW_COUNTER": "hits:{view}",
    "VIEW_TIMER": "latency:{view}",
    "VIEW_STATUS": "status:{view}:{class}",
    "EXPORT_TOKEN": None,
    "UNRESOLVED_VIEW": "unresolved",
    "OTHER_VIEW": "other",
    "MAX_VIEW_COUNTERS": 500,
    "ACTIVE_USERS": "active_users",
    "EXCLUDE_VIEWS": DEFAULT_EXCLUDE_VIEWS,
    "EXCLUDE_PATHS": None,
    "FAIL_OPEN_TIMEOUT": 0.25,
    "SEND_DELAY": 0.05,
    "SEND_BATCH_SIZE": 500,
    "SEND_QUEUE_SIZE": 50_000,
    "SEND_QUEUE_BYTES": 32 * 1024 * 1024,
    "SEND_RETRY_DELAY": 0.1,
    "SEND_RETRY_MAX_DELAY": 0.5,
    # Admin
    "ADMIN_PAGE_SIZE": 100,
    "DASHBOARD": DEFAULT_DASHBOARD,
}


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


class Settings:
    """Typed, always-fresh view of ``DJANGO_REDIS_METRICS``."""

    def __init__(self, fixed: Mapping[str, Any] | None = None) -> None:
        self._fixed = fixed

    @property
    def raw(self) -> Mapping[str, Any]:
        if self._fixed is not None:
            return self._fixed
        value = getattr(settings, SETTING_NAME, {})
        return value if isinstance(value, Mapping) else {}

    def snapshot(self) -> Settings:
        """The same typed view over the setting as it is now, read once: for code that reads
        several keys in one go (the middleware, once per request)."""
        return Settings(self.raw)

    def current(self) -> dict[str, Any]:
        """Every setting at once (defaults filled in), for code that needs several together."""
        return {**DEFAULTS, **self.raw}

    def get(self, name: str) -> Any:
        return self.raw.get(name, DEFAULTS[name])

    @property
    def CONNECTION(self) -> str:
        """A Redis URL (``redis://``, ``rediss://``, ``unix://``) or a ``CACHES`` alias name."""
        return str(self.get("CONNECTION"))

    @property
    def CLUSTER(self) -> bool:
        """Connect with ``RedisCluster`` to the cluster that ``CONNECTION`` points at."""
        return bool(self.get("CLUSTER"))

    @property
    def PREFIX(self) -> str:
        """The first segment of every key the app writes."""
        return str(self.get("PREFIX"))

    @property
    def TIME_ZONE(self) -> str:
        """Time zone of calendar periods; Django's ``TIME_ZONE`` unless set."""
        return str(self.get("TIME_ZONE") or getattr(settings, "TIME_ZONE", None) or "UTC")

    @property
    def SOCKET_TIMEOUT(self) -> float:
        return float(self.get("SOCKET_TIMEOUT"))

    @property
    def SOCKET_CONNECT_TIMEOUT(self) -> float:
        return float(self.get("SOCKET_CONNECT_TIMEOUT"))

    @property
    def COUNTER_PRECISIONS(self) -> tuple[int, ...]:
        value: Sequence[int] = self.get("COUNTER_PRECISIONS")
        return tuple(value)

    @property
    def COUNTER_SAMPLES(self) -> int:
        return int(self.get("COUNTER_SAMPLES"))

    @property
    def BITMAP_RETENTION(self) -> dict[str, int]:
        """Periods kept per period kind; kinds not given keep their default."""
        value: Mapping[str, int] = self.get("BITMAP_RETENTION")
        return {**DEFAULT_BITMAP_RETENTION, **value}

    @property
    def BITMAP_CACHE_TTL(self) -> int:
        """Seconds the union of periods that are over stays cached; 0 disables the cache."""
        return int(self.get("BITMAP_CACHE_TTL"))

    @property
    def MAX_USER_ID(self) -> int:
        """The highest integer user id a ``UniqueBitmap`` accepts: a bitmap takes one bit per
        id up to its highest, so 2**27 - 1 keeps one period's key within 16 MB."""
        return int(self.get("MAX_USER_ID"))

    @property
    def EVENT_RETENTION(self) -> float:
        """Seconds an ``EventSeries`` keeps its events unless it sets its own ``retention``."""
        return float(self.get("EVENT_RETENTION"))

    @property
    def EVENT_MAX_VALUES(self) -> Any:
        """Distinct values an ``EventSeries`` indexes per field unless it sets ``max_values``
        (validated where it is used)."""
        return self.get("EVENT_MAX_VALUES")

    @property
    def ESTIMATE_RETENTION(self) -> dict[str, int]:
        """Periods a ``UniqueEstimate`` keeps per period kind; kinds not given keep their
        default (validated where it is used)."""
        value: Mapping[str, int] = self.get("ESTIMATE_RETENTION")
        return {**DEFAULT_ESTIMATE_RETENTION, **value}

    # Django integration

    @property
    def HITS_COUNTER(self) -> str | None:
        """The site-wide counter of requests the middleware counts; ``None`` turns it off."""
        value = self.get("HITS_COUNTER")
        return None if value is None else str(value)

    @property
    def VIEW_COUNTER(self) -> str | None:
        """Name of one view's counter, ``{view}`` being its resolved name; ``None``: off."""
        value = self.get("VIEW_COUNTER")
        return None if value is None else str(value)

    @property
    def VIEW_TIMER(self) -> str | None:
        """Name of one view's ``Statistic`` of response times in milliseconds; ``None``: off."""
        value = self.get("VIEW_TIMER")
        return None if value is None else str(value)

    @property
    def VIEW_STATUS(self) -> str | None:
        """Name of one view's counter of one status class (``{class}``: ``2xx`` ... ``5xx``);
        ``None``: off."""
        value = self.get("VIEW_STATUS")
        return None if value is None else str(value)

    @property
    def EXPORT_TOKEN(self) -> str | None:
        """The bearer token a Prometheus scraper presents; ``None``: staff users only."""
        value = self.get("EXPORT_TOKEN")
        return None if value is None else str(value)

    @property
    def UNRESOLVED_VIEW(self) -> str:
        """The ``{view}`` of requests that resolve to no view (404s, handled by middleware)."""
        return str(self.get("UNRESOLVED_VIEW"))

    @property
    def OTHER_VIEW(self) -> str:
        """The ``{view}`` of views beyond ``MAX_VIEW_COUNTERS``, or with unusable names."""
        return str(self.get("OTHER_VIEW"))

    @property
    def MAX_VIEW_COUNTERS(self) -> int:
        """At most this many distinct per-view counters per process."""
        return int(self.get("MAX_VIEW_COUNTERS"))

    @property
    def ACTIVE_USERS(self) -> str | None:
        """The ``UniqueBitmap`` marking authenticated users; ``None`` turns it off."""
        value = self.get("ACTIVE_USERS")
        return None if value is None else str(value)

    @property
    def EXCLUDE_VIEWS(self) -> tuple[str, ...]:
        """``fnmatch`` patterns of resolved view names the middleware does not count."""
        return tuple(str(item) for item in self.get("EXCLUDE_VIEWS"))

    @property
    def EXCLUDE_PATHS(self) -> tuple[str, ...]:
        """Path prefixes the middleware does not count; default: static, media, favicon."""
        value = self.get("EXCLUDE_PATHS")
        if value is not None:
            return tuple(str(item) for item in value)
        from django.urls import get_script_prefix

        urls = (getattr(settings, "STATIC_URL", None), getattr(settings, "MEDIA_URL", None))
        return _default_exclude_paths(get_script_prefix(), *(str(url or "") for url in urls))

    @property
    def FAIL_OPEN_TIMEOUT(self) -> float:
        """Seconds the sender waits for Redis before it keeps the batch and tries again later."""
        return float(self.get("FAIL_OPEN_TIMEOUT"))

    @property
    def SEND_DELAY(self) -> float:
        """Seconds the sender waits after the first queued write, merging what follows."""
        return float(self.get("SEND_DELAY"))

    @property
    def SEND_BATCH_SIZE(self) -> int:
        """Most requests' writes merged into one round trip (that many waiting: sent at once)."""
        return int(self.get("SEND_BATCH_SIZE"))

    @property
    def SEND_QUEUE_SIZE(self) -> int:
        """Most requests' writes waiting to be stored per process; beyond, new ones are dropped."""
        return int(self.get("SEND_QUEUE_SIZE"))

    @property
    def SEND_QUEUE_BYTES(self) -> int:
        """Most (estimated) bytes of writes waiting per process; beyond, new ones are dropped."""
        return int(self.get("SEND_QUEUE_BYTES"))

    @property
    def SEND_RETRY_DELAY(self) -> float:
        """Seconds before the first new attempt after Redis failed; doubles at each failure."""
        return float(self.get("SEND_RETRY_DELAY"))

    @property
    def SEND_RETRY_MAX_DELAY(self) -> float:
        """The longest wait between two attempts while Redis fails."""
        return float(self.get("SEND_RETRY_MAX_DELAY"))

    # Admin

    @property
    def ADMIN_PAGE_SIZE(self) -> int:
        """Metrics per page in the admin's lists."""
        return int(self.get("ADMIN_PAGE_SIZE"))

    @property
    def DASHBOARD(self) -> Any:
        """The dashboard's tiles (validated where they are used, and by the system check)."""
        return self.get("DASHBOARD")


conf = Settings()
