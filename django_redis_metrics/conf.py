"""The app's settings, read from ``settings.DJANGO_REDIS_METRICS`` on every access.

Nothing is cached at import time, so ``override_settings`` and pytest-django's ``settings``
fixture take effect immediately.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings

SETTING_NAME = "DJANGO_REDIS_METRICS"

DEFAULT_PRECISIONS: tuple[int, ...] = (1, 5, 60, 300, 3600, 18000, 86400)
DEFAULT_SAMPLES = 120
#: Periods of each kind a UniqueBitmap keeps, counting the current one: 2 days of hours, about
#: 3 months of days, 2 years of ISO weeks, 5 years of months.
DEFAULT_BITMAP_RETENTION: dict[str, int] = {"hour": 48, "day": 92, "week": 105, "month": 60}
DEFAULT_EVENT_RETENTION = 30 * 86400

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
    "BITMAP_RETENTION": DEFAULT_BITMAP_RETENTION,
    "BITMAP_CACHE_TTL": 86400,
    "EVENT_RETENTION": DEFAULT_EVENT_RETENTION,
}


class Settings:
    """Typed, always-fresh view of ``DJANGO_REDIS_METRICS``."""

    @property
    def raw(self) -> Mapping[str, Any]:
        value = getattr(settings, SETTING_NAME, {})
        return value if isinstance(value, Mapping) else {}

    def get(self, name: str) -> Any:
        return self.raw.get(name, DEFAULTS[name])

    @property
    def CONNECTION(self) -> str:
        """A Redis URL (``redis://``, ``rediss://``, ``unix://``) or the name of a ``CACHES`` alias."""
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
    def EVENT_RETENTION(self) -> float:
        """Seconds an ``EventSeries`` keeps its events unless it sets its own ``retention``."""
        return float(self.get("EVENT_RETENTION"))


conf = Settings()
