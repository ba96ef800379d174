"""System checks for ``DJANGO_REDIS_METRICS``. Ids are stable; never reuse a retired one.

=========================  ==========================================================
django_redis_metrics.E001  the setting is not a dict
django_redis_metrics.W001  an unknown key (probably a typo)
django_redis_metrics.E002  CONNECTION is neither a Redis URL nor a string
django_redis_metrics.E003  CONNECTION names a CACHES alias that cannot share a Redis pool
django_redis_metrics.E004  PREFIX cannot prefix keys
django_redis_metrics.E005  CLUSTER is not a bool, or asks for a cluster over a unix socket
django_redis_metrics.E006  TIME_ZONE is not a known time zone
django_redis_metrics.E007  a socket timeout is not a positive number
django_redis_metrics.E008  COUNTER_PRECISIONS is not a list of positive ints
django_redis_metrics.E009  COUNTER_SAMPLES is not a positive int
django_redis_metrics.E010  STATISTIC_PRECISIONS is not a list of positive ints
django_redis_metrics.E011  STATISTIC_SAMPLES is not a positive int
django_redis_metrics.E020  EVENT_RETENTION is not a positive number of seconds
django_redis_metrics.E021  EVENT_MAX_VALUES is not a positive int
django_redis_metrics.E030  BITMAP_RETENTION is not a dict of period name -> positive int
django_redis_metrics.E031  BITMAP_CACHE_TTL is not a non-negative int
django_redis_metrics.E032  MAX_USER_ID is not an int in [0, 2**32 - 1]
django_redis_metrics.E040  HITS_COUNTER, ACTIVE_USERS, UNRESOLVED_VIEW or OTHER_VIEW cannot name
                           a metric
django_redis_metrics.E041  VIEW_COUNTER is not None or a name template containing "{view}"
django_redis_metrics.E042  MAX_VIEW_COUNTERS is not an int in [1, 10000]
django_redis_metrics.E043  EXCLUDE_VIEWS or EXCLUDE_PATHS is not a list of strings
django_redis_metrics.E044  FAIL_OPEN_TIMEOUT is not a positive number
django_redis_metrics.E045  SEND_DELAY is not a non-negative number of seconds
django_redis_metrics.E046  SEND_BATCH_SIZE or SEND_QUEUE_SIZE is not a positive int
django_redis_metrics.E047  SEND_QUEUE_BYTES is not a positive int
django_redis_metrics.E048  SEND_RETRY_DELAY or SEND_RETRY_MAX_DELAY is not a positive number of
                           seconds, or the first retry comes later than the longest wait
django_redis_metrics.E050  ADMIN_PAGE_SIZE is not a positive int
django_redis_metrics.E051  DASHBOARD is not a list of dashboard tiles (names, dotted paths of
                           Tile subclasses, or {"tile": ..., **options})
django_redis_metrics.E052  VIEW_TIMER is not None or a name template containing "{view}"
django_redis_metrics.E053  VIEW_STATUS is not None or a name template containing "{view}" and
                           "{class}"
django_redis_metrics.E054  EXPORT_TOKEN is not None or a str of at least 16 characters
django_redis_metrics.E070  ESTIMATE_RETENTION is not a dict of period name -> positive int
=========================  ==========================================================
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning
from django.core.exceptions import ImproperlyConfigured

from .bitmaps.ids import validate_max_user_id
from .bitmaps.query import validate_cache_ttl
from .bitmaps.retention import validate_retention as bitmaps_validate_retention
from .conf import DEFAULTS, SETTING_NAME
from .core.connection import is_url
from .core.keys import validate_name, validate_prefix
from .core.retention import validate_precisions, validate_samples
from .core.sentinel import is_sentinel_url
from .core.sentinel import parse as parse_sentinel_url
from .core.validation import positive_int, seconds
from .estimates.retention import validate_retention as estimates_validate_retention
from .events.model import validate_max_values
from .events.model import validate_retention as events_validate_retention

ID = "django_redis_metrics.{}"
#: Keys the app no longer reads, and what replaced them (the hint of their W001 warning).
REMOVED_KEYS = {
    "FAIL_OPEN_COOLDOWN": "FAIL_OPEN_COOLDOWN was removed: writes are no longer dropped for a "
    "cooldown after a failure but kept and retried (see SEND_RETRY_DELAY, "
    "SEND_RETRY_MAX_DELAY). Delete the key.",
}
REDIS_CACHE_BACKENDS = ("django_redis.", "django.core.cache.backends.redis.RedisCache")


def check_settings(**kwargs: Any) -> list[CheckMessage]:
    raw = getattr(settings, SETTING_NAME, {})
    if not isinstance(raw, Mapping):
        message = f"{SETTING_NAME} must be a dict, not {type(raw).__name__}."
        return [Error(message, id=ID.format("E001"))]
    errors: list[CheckMessage] = []
    for key in sorted(set(raw) - set(DEFAULTS)):
        errors.append(
            Warning(
                f"{SETTING_NAME} has an unknown key {key!r}.",
                hint=REMOVED_KEYS.get(key, f"Known keys: {', '.join(sorted(DEFAULTS))}."),
                id=ID.format("W001"),
            )
        )
    value = {**DEFAULTS, **raw}
    errors += _check_connection(value["CONNECTION"], value["CLUSTER"])
    errors += _validated(value["PREFIX"], validate_prefix, "PREFIX", "E004")
    errors += _check_time_zone(value["TIME_ZONE"])
    for name in ("SOCKET_TIMEOUT", "SOCKET_CONNECT_TIMEOUT"):
        errors += _validated(value[name], partial(seconds, what=name), name, "E007")
    errors += _validated(
        value["COUNTER_PRECISIONS"], validate_precisions, "COUNTER_PRECISIONS", "E008"
    )
    errors += _validated(value["COUNTER_SAMPLES"], validate_samples, "COUNTER_SAMPLES", "E009")
    errors += _validated(
        value["STATISTIC_PRECISIONS"], validate_precisions, "STATISTIC_PRECISIONS", "E010"
    )
    errors += _validated(value["STATISTIC_SAMPLES"], validate_samples, "STATISTIC_SAMPLES", "E011")
    errors += _validated(
        value["EVENT_RETENTION"], events_validate_retention, "EVENT_RETENTION", "E020"
    )
    errors += _validated(value["EVENT_MAX_VALUES"], validate_max_values, "EVENT_MAX_VALUES", "E021")
    errors += _validated(
        value["BITMAP_RETENTION"], bitmaps_validate_retention, "BITMAP_RETENTION", "E030"
    )
    errors += _validated(value["BITMAP_CACHE_TTL"], validate_cache_ttl, "BITMAP_CACHE_TTL", "E031")
    errors += _validated(value["MAX_USER_ID"], validate_max_user_id, "MAX_USER_ID", "E032")
    errors += _validated(
        value["ESTIMATE_RETENTION"], estimates_validate_retention, "ESTIMATE_RETENTION", "E070"
    )
    errors += check_integration(value)
    return errors


def check_integration(value: Mapping[str, Any]) -> list[CheckMessage]:
    """The middleware's, decorators' and fail-open settings (ids E040-E059)."""
    errors: list[CheckMessage] = []
    for name, optional in (
        ("HITS_COUNTER", True),
        ("ACTIVE_USERS", True),
        ("UNRESOLVED_VIEW", False),
        ("OTHER_VIEW", False),
    ):
        if not (optional and value[name] is None):
            errors += _validated(value[name], validate_name, name, "E040")
    for name, fields, check_id in (
        ("VIEW_COUNTER", ("{view}",), "E041"),
        ("VIEW_TIMER", ("{view}",), "E052"),
        ("VIEW_STATUS", ("{view}", "{class}"), "E053"),
    ):
        errors += check_name_template(value[name], name, fields, check_id)
    token = value["EXPORT_TOKEN"]
    if token is not None and (not isinstance(token, str) or len(token.strip()) < MIN_TOKEN):
        errors.append(
            Error(
                f"{SETTING_NAME}['EXPORT_TOKEN'] must be None or a str of at least {MIN_TOKEN} "
                "characters (a secret, e.g. from secrets.token_urlsafe()).",
                id=ID.format("E054"),
            )
        )
    errors += _validated(
        value["MAX_VIEW_COUNTERS"], validate_max_view_counters, "MAX_VIEW_COUNTERS", "E042"
    )
    for name in ("EXCLUDE_VIEWS", "EXCLUDE_PATHS"):
        items = value[name]
        if name == "EXCLUDE_PATHS" and items is None:
            continue
        if (
            isinstance(items, str)
            or not isinstance(items, list | tuple)
            or not all(isinstance(item, str) and item for item in items)
        ):
            errors.append(
                Error(
                    f"{SETTING_NAME}['{name}'] must be a list of non-empty strings, not {items!r}.",
                    id=ID.format("E043"),
                )
            )
        elif name == "EXCLUDE_PATHS" and any(not item.startswith("/") for item in items):
            errors.append(
                Error(
                    f"{SETTING_NAME}['EXCLUDE_PATHS'] entries are path prefixes and "
                    f"must start with '/': {items!r}.",
                    id=ID.format("E043"),
                )
            )
    errors += _validated(
        value["FAIL_OPEN_TIMEOUT"],
        partial(seconds, what="FAIL_OPEN_TIMEOUT"),
        "FAIL_OPEN_TIMEOUT",
        "E044",
    )
    errors += _validated(
        value["SEND_DELAY"],
        partial(seconds, what="SEND_DELAY", allow_zero=True),
        "SEND_DELAY",
        "E045",
    )
    for name in ("SEND_BATCH_SIZE", "SEND_QUEUE_SIZE"):
        errors += _validated(value[name], partial(positive_int, what=name), name, "E046")
    errors += _validated(
        value["SEND_QUEUE_BYTES"],
        partial(positive_int, what="SEND_QUEUE_BYTES"),
        "SEND_QUEUE_BYTES",
        "E047",
    )
    errors += _check_retry_delays(value["SEND_RETRY_DELAY"], value["SEND_RETRY_MAX_DELAY"])
    errors += _validated(
        value["ADMIN_PAGE_SIZE"],
        partial(positive_int, what="ADMIN_PAGE_SIZE"),
        "ADMIN_PAGE_SIZE",
        "E050",
    )
    if apps.is_installed("django.contrib.admin"):  # the dashboard is an admin page
        from .admin.dashboard import resolve_tiles

        errors += _validated(value["DASHBOARD"], resolve_tiles, "DASHBOARD", "E051")
    return errors


#: Most per-view counters the middleware keeps per process (each about 17 KB in Redis).
def check_name_template(
    template: object, name: str, fields: tuple[str, ...], check_id: str
) -> list[CheckMessage]:
    """A metric name template of the middleware: ``None``, or a str holding every one of
    ``fields`` that names a metric once they are filled in."""
    if template is None:
        return []
    if not isinstance(template, str) or not all(field in template for field in fields):
        wanted = " and ".join(f"'{field}'" for field in fields)
        return [
            Error(
                f"{SETTING_NAME}[{name!r}] must be None or a str containing {wanted}, "
                f"not {template!r}.",
                id=ID.format(check_id),
            )
        ]
    example = template.replace("{view}", "view").replace("{class}", "2xx")
    return _validated(example, validate_name, name, check_id)


#: Shortest EXPORT_TOKEN accepted: a guessable token would open every metric to anyone.
MIN_TOKEN = 16
MAX_VIEW_COUNTERS_LIMIT = 10_000


def validate_max_view_counters(value: object) -> int:
    number = positive_int(value, "MAX_VIEW_COUNTERS")
    if number > MAX_VIEW_COUNTERS_LIMIT:
        raise ValueError(f"MAX_VIEW_COUNTERS must be at most {MAX_VIEW_COUNTERS_LIMIT}.")
    return number


def _check_retry_delays(first: Any, longest: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    for name, delay in (("SEND_RETRY_DELAY", first), ("SEND_RETRY_MAX_DELAY", longest)):
        errors += _validated(delay, partial(seconds, what=name), name, "E048")
    if not errors and first > longest:
        message = (
            f"{SETTING_NAME}['SEND_RETRY_DELAY'] ({first!r} s) must not be longer than "
            f"SEND_RETRY_MAX_DELAY ({longest!r} s)."
        )
        errors.append(Error(message, id=ID.format("E048")))
    return errors


def _validated(
    value: Any, validator: Callable[[Any], Any], name: str, code: str
) -> list[CheckMessage]:
    try:
        validator(value)
    except (TypeError, ValueError) as exc:
        return [Error(f"{SETTING_NAME}['{name}'] is invalid: {exc}", id=ID.format(code))]
    return []


def _check_connection(connection: Any, cluster: Any) -> list[CheckMessage]:
    errors: list[CheckMessage] = []
    if not isinstance(cluster, bool):
        errors.append(
            Error(
                f"{SETTING_NAME}['CLUSTER'] must be True or False, not {cluster!r}.",
                id=ID.format("E005"),
            )
        )
    if not isinstance(connection, str) or not connection:
        errors.append(
            Error(
                f"{SETTING_NAME}['CONNECTION'] must be a Redis URL or a CACHES alias, "
                f"not {connection!r}.",
                hint=(
                    "For example 'redis://localhost:6379/0', 'unix:///run/redis.sock' or 'default'."
                ),
                id=ID.format("E002"),
            )
        )
        return errors
    if is_url(connection):
        if cluster is True and not connection.startswith(("redis://", "rediss://")):
            errors.append(
                Error(
                    "With CLUSTER = True, CONNECTION is the redis:// or rediss:// URL of a node.",
                    id=ID.format("E005"),
                )
            )
        if is_sentinel_url(connection):
            try:
                parse_sentinel_url(connection)
            except ImproperlyConfigured as error:
                errors.append(Error(str(error), id=ID.format("E002")))
        return errors
    if "://" in connection:
        errors.append(
            Error(
                f"{SETTING_NAME}['CONNECTION'] = {connection!r} has an unknown scheme.",
                hint="Use redis://, rediss://, unix:// or redis+sentinel://, or the name of a "
                "CACHES alias.",
                id=ID.format("E002"),
            )
        )
        return errors
    caches: Mapping[str, Mapping[str, Any]] = getattr(settings, "CACHES", {})
    backend = str(caches.get(connection, {}).get("BACKEND", ""))
    if connection not in caches or not backend.startswith(REDIS_CACHE_BACKENDS):
        errors.append(
            Error(
                f"{SETTING_NAME}['CONNECTION'] = {connection!r} is not a CACHES alias "
                "backed by Redis "
                f"(found {backend or 'no such alias'!r}).",
                hint="Name a django-redis or django.core.cache.backends.redis.RedisCache alias, "
                "or give a Redis URL.",
                id=ID.format("E003"),
            )
        )
    return errors


def _check_time_zone(name: Any) -> list[CheckMessage]:
    if name is None:
        return []
    try:
        zoneinfo.ZoneInfo(str(name))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        return [
            Error(
                f"{SETTING_NAME}['TIME_ZONE'] = {name!r} is not a known time zone.",
                id=ID.format("E006"),
            )
        ]
    return []
