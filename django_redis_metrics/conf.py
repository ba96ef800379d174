"""The app's settings, read from ``settings.DJANGO_REDIS_METRICS`` on every access.

Each key is declared once, below, as a :class:`~.setting.Setting`: its default, its type, its
system check and its line in ``docs/settings.md`` (written from this table by
``scripts/settings_docs.py``). Nothing is cached at import time, so ``override_settings`` and
pytest-django's ``settings`` fixture take effect immediately.
"""

from __future__ import annotations

from typing import Any

from .archive.settings import ArchiveSettings
from .defaults import (
    DEFAULT_BITMAP_RETENTION,
    DEFAULT_CONNECTION,
    DEFAULT_DASHBOARD,
    DEFAULT_ESTIMATE_RETENTION,
    DEFAULT_EVENT_RETENTION,
    DEFAULT_EXCLUDE_VIEWS,
    DEFAULT_MAX_SERIES,
    DEFAULT_PRECISIONS,
    DEFAULT_SAMPLES,
    DEFAULT_STATISTIC_PRECISIONS,
    as_is,
    bitmap_retention,
    estimate_retention,
    exclude_paths,
    ints,
    optional_str,
    strs,
    time_zone,
)
from .insight_settings import InsightSettings
from .sender_settings import SenderOptions, SenderSetting
from .setting import PACKAGE, SETTING_NAME, Setting, SettingsReader

__all__ = ["DEFAULTS", "SETTING_NAME", "Settings", "conf"]


class Settings(SettingsReader, InsightSettings, ArchiveSettings):
    """Typed, always-fresh view of ``DJANGO_REDIS_METRICS``: one attribute per key."""

    CONNECTION: Setting[str] = Setting(
        DEFAULT_CONNECTION,
        str,
        "A Redis URL (`redis://`, `rediss://` for TLS, `unix:///path/redis.sock?db=0`, or "
        "`redis+sentinel://...`: [Deployments](operations.md#deployments)), or a `CACHES` alias "
        "of django-redis (Sentinel too) or Django's `RedisCache`, whose pool is then shared.",
        check="E002",
        validator=f"{PACKAGE}.checks.validate_connection",
    )
    CLUSTER: Setting[bool] = Setting(
        False,
        bool,
        "`True` when `CONNECTION` is the URL of any node of a Redis Cluster.",
        check="E005",
        validator=f"{PACKAGE}.checks.validate_bool",
    )
    PREFIX: Setting[str] = Setting(
        "metrics",
        str,
        "First segment of every key the app writes. No braces, no control characters.",
        check="E004",
        validator=f"{PACKAGE}.core.keys.validate_prefix",
    )
    TIME_ZONE: Setting[str] = Setting(
        None,
        time_zone,
        "Time zone of calendar periods (hours, days, ISO weeks, months) and of every date the "
        "admin pages, the dashboard and the exports show, whatever the browser's zone (see [time "
        "zone](admin.md#one-time-zone-the-sites)).",
        check="E006",
        validator=f"{PACKAGE}.checks.validate_time_zone",
        shown="`None`: Django's `TIME_ZONE`",
    )
    SOCKET_TIMEOUT: Setting[float] = Setting(
        5.0,
        float,
        "Seconds to wait for a reply.",
        check="E007",
        validator=f"{PACKAGE}.core.validation.positive_seconds",
    )
    SOCKET_CONNECT_TIMEOUT: Setting[float] = Setting(
        2.0,
        float,
        "Seconds to wait for a connection.",
        check="E007",
        validator=f"{PACKAGE}.core.validation.positive_seconds",
    )
    ASYNC_MAX_CONNECTIONS: Setting[int] = Setting(
        100,
        int,
        "Connections each event loop's async client may open. Awaits beyond it wait for one "
        "to be free (each costs about 20 KB in Redis and a file descriptor on both sides).",
        check="E012",
        validator=f"{PACKAGE}.core.validation.connection_count",
    )
    ASYNC_POOL_TIMEOUT: Setting[float] = Setting(
        10.0,
        float,
        "Seconds an await waits for a free async connection before raising `AsyncPoolTimeout`.",
        check="E012",
        validator=f"{PACKAGE}.core.validation.positive_seconds",
    )
    COUNTER_PRECISIONS: Setting[tuple[int, ...]] = Setting(
        DEFAULT_PRECISIONS,
        ints,
        "Default precisions of a `Counter`, in seconds: at most 64, each at most 366 days.",
        check="E008",
        validator=f"{PACKAGE}.core.retention.validate_precisions",
    )
    COUNTER_SAMPLES: Setting[int] = Setting(
        DEFAULT_SAMPLES,
        int,
        "Default number of slices a `Counter` keeps per precision, enforced as it is written; at "
        "most 10,000. Below the server's `hash-max-listpack-entries` (512 by default; a write adds "
        "a slice before it deletes the one that fell out) each precision hash stays in the "
        "compact encoding, about 7 bytes per slice; above, about 60.",
        check="E009",
        validator=f"{PACKAGE}.core.retention.validate_samples",
    )
    STATISTIC_PRECISIONS: Setting[tuple[int, ...]] = Setting(
        DEFAULT_STATISTIC_PRECISIONS,
        ints,
        "Default precisions of a `Statistic` (and so of the middleware's per-view latency), in "
        "seconds: at most 64, each at most 366 days. A `Gauge` takes `COUNTER_PRECISIONS`.",
        check="E010",
        validator=f"{PACKAGE}.core.retention.validate_precisions",
    )
    STATISTIC_SAMPLES: Setting[int] = Setting(
        DEFAULT_SAMPLES,
        int,
        "Default number of slices a `Statistic` keeps per precision, enforced as it is written; "
        "at most 10,000. A slice takes about 50 bytes plus 9 to 13 per histogram bucket holding "
        "values (at most 96 buckets: about 1.3 KB; a busy view's latency about 97 KB a day), see "
        "[Statistic](statistic.md#what-it-costs). A `Gauge` takes `COUNTER_SAMPLES`.",
        check="E011",
        validator=f"{PACKAGE}.core.retention.validate_samples",
    )
    EVENT_RETENTION: Setting[float] = Setting(
        DEFAULT_EVENT_RETENTION,
        float,
        "Seconds an `EventSeries` keeps events unless it sets `retention`, enforced as events are "
        "recorded; at least 1 second, at most 100 years.",
        check="E020",
        validator=f"{PACKAGE}.events.model.validate_retention",
        shown="`2592000` (30 days)",
    )
    EVENT_MAX_VALUES: Setting[Any] = Setting(
        1000,
        as_is,
        "Distinct values an `EventSeries` indexes per field unless it sets `max_values` (at most "
        '100,000; each value is a sorted set); further new values are indexed under `"(other)"`.',
        check="E021",
        validator=f"{PACKAGE}.events.prepare.validate_max_values",
    )
    BITMAP_RETENTION: Setting[dict[str, int]] = Setting(
        DEFAULT_BITMAP_RETENTION,
        bitmap_retention,
        "Periods of each kind a `UniqueBitmap` keeps, counting the current one; kinds left out "
        "keep their default; at most about 100 years of each. Enforced as marks are written: a "
        "period key expires at the end of its retention, and older marks are not kept.",
        check="E030",
        validator=f"{PACKAGE}.bitmaps.retention.validate_retention",
    )
    BITMAP_CACHE_TTL: Setting[int] = Setting(
        86400,
        int,
        "Seconds the union of finished periods of a range stays cached; `0` disables the cache.",
        check="E031",
        validator=f"{PACKAGE}.bitmaps.query.validate_cache_ttl",
    )
    MAX_USER_ID: Setting[int] = Setting(
        2**27 - 1,
        int,
        "The highest integer user id a `UniqueBitmap` accepts (at most 2^32 - 1). A bitmap takes "
        "one bit per id up to its highest, so this bounds one period's key: 16 MB at the default, "
        "512 MB at 2^32 - 1 (and a first mark that high blocks Redis for about 300 ms per "
        "period). Above it, a mark raises `ValueError`; pass sparse or huge ids as `str` to have "
        "them mapped to dense offsets.",
        check="E032",
        validator=f"{PACKAGE}.bitmaps.ids.validate_max_user_id",
        shown="`134217727` (2^27 - 1)",
    )
    ESTIMATE_RETENTION: Setting[dict[str, int]] = Setting(
        DEFAULT_ESTIMATE_RETENTION,
        estimate_retention,
        "Periods of each kind a `UniqueEstimate` keeps, counting the current one; kinds left out "
        "keep their default; at most about 100 years of each. Enforced as items are added: a "
        "period key (at most 14 KB) expires at the end of its retention, and older adds are not "
        "kept.",
        check="E070",
        validator=f"{PACKAGE}.estimates.retention.validate_retention",
    )
    HITS_COUNTER: Setting[str | None] = Setting(
        "hits",
        optional_str,
        "The middleware's `Counter` of requests, labelled by `view` (the resolved view name, never "
        "the path) and `status` (`2xx` ... `5xx`; a view that raises is `5xx`): "
        '`Counter("hits").total()` is the site\'s hits. `None` turns it off.',
        check="E040",
        validator=f"{PACKAGE}.checks.validate_optional_name",
    )
    LATENCY_STATISTIC: Setting[str | None] = Setting(
        "latency",
        optional_str,
        "The middleware's [`Statistic`](statistic.md) of response times in milliseconds, labelled "
        "by `view`, at `STATISTIC_PRECISIONS`. `None` turns it off.",
        check="E056",
        validator=f"{PACKAGE}.checks.validate_optional_name",
    )
    VIEW_COUNTER: Setting[str | None] = Setting(
        None,
        optional_str,
        'Before labels: a plain counter per view, e.g. `"hits:{view}"`, written as well as '
        "`HITS_COUNTER` when set ([upgrading](django.md#upgrading-from-per-view-names)).",
        check="E041",
        validator=f"{PACKAGE}.checks.validate_view_template",
    )
    VIEW_TIMER: Setting[str | None] = Setting(
        None,
        optional_str,
        'Before labels: a `Statistic` per view, e.g. `"latency:{view}"`, written as well as '
        "`LATENCY_STATISTIC` when set.",
        check="E052",
        validator=f"{PACKAGE}.checks.validate_view_template",
    )
    VIEW_STATUS: Setting[str | None] = Setting(
        None,
        optional_str,
        'Before labels: a counter per view and status class, e.g. `"status:{view}:{class}"`, '
        "written as well as `HITS_COUNTER` when set.",
        check="E053",
        validator=f"{PACKAGE}.checks.validate_status_template",
    )
    EXPORT_TOKEN: Setting[str | None] = Setting(
        None,
        optional_str,
        "The secret a Prometheus scraper sends as `Authorization: Bearer <token>` to read [the "
        "exposition](prometheus.md) (at least 16 characters). With `None`, only signed-in staff "
        "users with the `view_metrics` permission can read it.",
        check="E054",
        validator=f"{PACKAGE}.checks.validate_export_token",
    )
    UNRESOLVED_VIEW: Setting[str] = Setting(
        "unresolved",
        str,
        "The `view` label of requests that resolve to no view (404s).",
        check="E040",
        validator=f"{PACKAGE}.checks.validate_view_label",
    )
    OTHER_VIEW: Setting[str] = Setting(
        "other",
        str,
        "The `view` label of views beyond `MAX_VIEW_COUNTERS`.",
        check="E040",
        validator=f"{PACKAGE}.checks.validate_view_label",
    )
    MAX_VIEW_COUNTERS: Setting[int] = Setting(
        500,
        int,
        "Most distinct view labels one process writes (at most 10,000); the middleware's "
        "metrics keep up to 4 times (this + 2) series of hits and this + 2 of latency (a counter "
        "series takes about 6 KB after a day).",
        check="E042",
        validator=f"{PACKAGE}.checks.validate_max_view_counters",
    )
    ACTIVE_USERS: Setting[str | None] = Setting(
        "active_users",
        optional_str,
        "The `UniqueBitmap` in which the middleware marks authenticated users (by `pk`) whose "
        "request loaded the user (see [the middleware](django.md#the-middleware)); `None` turns "
        "it off.",
        check="E040",
        validator=f"{PACKAGE}.checks.validate_optional_name",
    )
    EXCLUDE_VIEWS: Setting[tuple[str, ...]] = Setting(
        DEFAULT_EXCLUDE_VIEWS,
        strs,
        "`fnmatch` patterns of view names the middleware does not count.",
        check="E043",
        validator=f"{PACKAGE}.checks.validate_exclude_views",
    )
    EXCLUDE_PATHS: Setting[tuple[str, ...]] = Setting(
        None,
        exclude_paths,
        "Path prefixes the middleware does not count, compared with `request.path_info` (without "
        "the script prefix: the default drops it from `STATIC_URL` and `MEDIA_URL` when the site "
        "is served under a sub-path).",
        check="E043",
        validator=f"{PACKAGE}.checks.validate_exclude_paths",
        shown="`None`: `STATIC_URL`, `MEDIA_URL`, `/favicon.ico`, `/robots.txt`",
    )
    SENDER: Setting[SenderOptions] = SenderSetting(
        {},
        SenderOptions.of,
        "The background sender's tuning: a dict of the keys below (see [The sender]"
        "(#the-sender-sender)); keys left out keep their default.",
        check="E049",
        validator=f"{PACKAGE}.checks.validate_sender",
        shown="`{}`",
    )
    MAX_SERIES: Setting[int] = Setting(
        DEFAULT_MAX_SERIES,
        int,
        "Most series (label sets) one labelled metric keeps; a metric's `max_series=` overrides "
        "it. Writes of further label sets go to its `__other__` series, counted and logged once "
        "(see [Labels](labels.md)). A counter series costs about 6 KB after a day.",
        check="E055",
        validator=f"{PACKAGE}.core.validation.series_cap",
    )
    ADMIN_PAGE_SIZE: Setting[int] = Setting(
        100,
        int,
        "Metrics per page in the admin lists.",
        check="E050",
        validator=f"{PACKAGE}.core.validation.positive_count",
    )
    DASHBOARD: Setting[Any] = Setting(
        DEFAULT_DASHBOARD,
        as_is,
        "The [dashboard](admin.md#the-dashboard)'s tiles, in order: tile names, dotted paths of "
        '`Tile` subclasses, or `{"tile": ..., **options}` (e.g. `{"tile": "top_views", "limit": '
        "20}`). Whatever the tiles, the page costs three round trips.",
        check="E051",
        validator=f"{PACKAGE}.checks.validate_dashboard",
    )

    def snapshot(self) -> Settings:
        """The same typed view over the setting as it is now, read once: for code that reads
        several keys in one go."""
        return Settings(self.raw)

    def get(self, name: str) -> Any:
        """The stored value of key ``name`` (its default when unset), untyped."""
        setting: Setting[Any] = getattr(Settings, name)
        return setting.value(self.raw)

    def current(self) -> dict[str, Any]:
        """Every key as written at once, defaults filled in (untyped; ``SENDER`` as written):
        one read of the setting for code that needs several keys on a hot path."""
        return {**DEFAULTS, **self.raw}


conf = Settings()

#: Every key the app understands, with its default. ``checks.py`` warns about any other key.
DEFAULTS: dict[str, Any] = {setting.name: setting.default for setting in Settings.table()}
