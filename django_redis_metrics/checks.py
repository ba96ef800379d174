"""System checks of ``DJANGO_REDIS_METRICS``. Ids are stable; never reuse a retired one.

Each key is checked by the validator its :class:`~.setting.Setting` names in ``conf.py``, under
the check id it names there (``docs/checks.md`` lists them all); the few rules that tie two
keys together, or a key to Django's own settings, are written out below.

=========================  ==========================================================
django_redis_metrics.E001  the setting is not a dict
django_redis_metrics.W001  an unknown key (probably a typo), in the setting or in SENDER
django_redis_metrics.W002  a flat sender key (SEND_DELAY...) that now belongs in SENDER
django_redis_metrics.E003  CONNECTION names a CACHES alias that cannot share a Redis pool
django_redis_metrics.E005  CLUSTER asks for a cluster over a unix socket or Sentinel
django_redis_metrics.E048  SENDER's first retry comes later than its longest wait
django_redis_metrics.E064  ANNOTATION_TOKEN is EXPORT_TOKEN (a read token must not write)
=========================  ==========================================================
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Callable, Mapping
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning
from django.core.exceptions import ImproperlyConfigured
from django.utils.module_loading import import_string

from .conf import DEFAULTS, SETTING_NAME, Settings
from .core.connection import is_url
from .core.keys import validate_name
from .core.labels.labelling import label_value
from .core.sentinel import is_sentinel_url
from .core.sentinel import parse as parse_sentinel_url
from .core.validation import positive_int, shown
from .sender_settings import LEGACY_SENDER_KEYS, SENDER_KEYS

ID = "django_redis_metrics.{}"
#: The URLs a Redis Cluster can be reached by (a node's).
NODE_URLS = ("redis://", "rediss://")
#: Keys the app no longer reads, and what replaced them (the hint of their W001 warning).
REMOVED_KEYS = {
    "FAIL_OPEN_COOLDOWN": "FAIL_OPEN_COOLDOWN was removed: writes are no longer dropped for a "
    "cooldown after a failure but kept and retried (see SENDER's RETRY_DELAY and "
    "RETRY_MAX_DELAY). Delete the key.",
}
REDIS_CACHE_BACKENDS = ("django_redis.", "django.core.cache.backends.redis.RedisCache")
#: Shortest EXPORT_TOKEN accepted: a guessable token would open every metric to anyone.
MIN_TOKEN = 16
#: Most per-view counters the middleware keeps per process (each about 17 KB in Redis).
MAX_VIEW_COUNTERS_LIMIT = 10_000


def check_settings(**kwargs: Any) -> list[CheckMessage]:
    raw = getattr(settings, SETTING_NAME, {})
    if not isinstance(raw, Mapping):
        message = f"{SETTING_NAME} must be a dict, not {type(raw).__name__}."
        return [Error(message, id=ID.format("E001"))]
    errors = _unknown_keys(raw)
    for setting in Settings.table():
        if setting.validator is not None and setting.check is not None:
            value = raw.get(setting.name, setting.default)
            validator = import_string(setting.validator)
            errors += _validated(value, validator, setting.name, setting.check)
    errors += _check_cache_alias(raw.get("CONNECTION", DEFAULTS["CONNECTION"]))
    connection = str(raw.get("CONNECTION", ""))
    if raw.get("CLUSTER") is True and is_url(connection) and not connection.startswith(NODE_URLS):
        message = "With CLUSTER = True, CONNECTION is the redis:// or rediss:// URL of a node."
        errors.append(Error(message, id=ID.format("E005")))
    token = raw.get("ANNOTATION_TOKEN")
    if token is not None and token == raw.get("EXPORT_TOKEN"):
        message = "ANNOTATION_TOKEN must differ from EXPORT_TOKEN: a read token must not write."
        errors.append(Error(message, id=ID.format("E064")))
    return errors + check_sender(raw)


def check_sender(raw: Mapping[str, Any]) -> list[CheckMessage]:
    """``SENDER``'s keys (as they are read: the dict's, else the old flat keys), and a warning
    for each flat key still set."""
    errors: list[CheckMessage] = []
    given = raw.get("SENDER", {})
    if isinstance(given, Mapping):
        known = [key.name for key in SENDER_KEYS]
        for name in sorted(set(given) - set(known), key=str):
            errors.append(
                Warning(
                    f"{SETTING_NAME}['SENDER'] has an unknown key {name!r}.",
                    hint=f"Known keys: {', '.join(known)}.",
                    id=ID.format("W001"),
                )
            )
    for legacy, name in LEGACY_SENDER_KEYS.items():
        if legacy in raw:
            ignored = isinstance(given, Mapping) and name in given
            errors.append(
                Warning(
                    f"{SETTING_NAME}[{legacy!r}] is now {SETTING_NAME}['SENDER'][{name!r}]"
                    + (" (which is set, so this key is ignored)." if ignored else "."),
                    hint=f"Move it: 'SENDER': {{{name!r}: ...}}.",
                    id=ID.format("W002"),
                )
            )
    value = Settings.SENDER.value(raw)
    invalid: list[CheckMessage] = []
    for key in SENDER_KEYS:
        name = f"SENDER['{key.name}']"
        invalid += _validated(value[key.name], import_string(key.validator), name, key.check)
    errors += invalid
    first, longest = value["RETRY_DELAY"], value["RETRY_MAX_DELAY"]
    if not invalid and first > longest:
        message = (
            f"{SETTING_NAME}['SENDER']['RETRY_DELAY'] ({first!r} s) must not be longer than "
            f"RETRY_MAX_DELAY ({longest!r} s)."
        )
        errors.append(Error(message, id=ID.format("E048")))
    if not invalid and value["REPLICAS"] and raw.get("CLUSTER"):
        message = (
            f"{SETTING_NAME}['SENDER']['REPLICAS'] is not supported on Redis Cluster "
            f"(CLUSTER is True)."
        )
        hint = "Leave it at 0: it waits for the replicas of a single node or Sentinel master."
        errors.append(Error(message, hint=hint, id=ID.format("E093")))
    return errors


def _unknown_keys(raw: Mapping[str, Any]) -> list[CheckMessage]:
    known = sorted(DEFAULTS)
    return [
        Warning(
            f"{SETTING_NAME} has an unknown key {key!r}.",
            hint=REMOVED_KEYS.get(key, f"Known keys: {', '.join(known)}."),
            id=ID.format("W001"),
        )
        for key in sorted(set(raw) - set(DEFAULTS) - set(LEGACY_SENDER_KEYS), key=str)
    ]


def _validated(
    value: Any, validator: Callable[[Any], Any], name: str, code: str
) -> list[CheckMessage]:
    try:
        validator(value)
    except (TypeError, ValueError) as exc:
        return [Error(f"{SETTING_NAME}['{name}'] is invalid: {exc}", id=ID.format(code))]
    return []


def _check_cache_alias(connection: Any) -> list[CheckMessage]:
    if not isinstance(connection, str) or not connection or "://" in connection:
        return []  # a URL, or a value validate_connection refuses
    caches: Mapping[str, Mapping[str, Any]] = getattr(settings, "CACHES", {})
    backend = str(caches.get(connection, {}).get("BACKEND", ""))
    if connection in caches and backend.startswith(REDIS_CACHE_BACKENDS):
        return []
    return [
        Error(
            f"{SETTING_NAME}['CONNECTION'] = {connection!r} is not a CACHES alias backed by "
            f"Redis (found {backend or 'no such alias'!r}).",
            hint="Name a django-redis or django.core.cache.backends.redis.RedisCache alias, "
            "or give a Redis URL.",
            id=ID.format("E003"),
        )
    ]


# The validators that conf.py's table names (each refuses a bad value with TypeError or
# ValueError, saying what is wrong).


def validate_connection(value: object) -> str:
    """A Redis URL (``redis://``, ``rediss://``, ``unix://``, ``redis+sentinel://``) or the name
    of a CACHES alias."""
    if not isinstance(value, str) or not value:
        raise TypeError(
            "must be a Redis URL (e.g. 'redis://localhost:6379/0', 'unix:///run/redis.sock') "
            f"or the name of a CACHES alias, not {shown(value)}."
        )
    if "://" in value and not is_url(value):
        raise ValueError(
            f"{shown(value)} has an unknown scheme: use redis://, rediss://, unix:// or "
            "redis+sentinel://."
        )
    if is_sentinel_url(value):
        try:
            parse_sentinel_url(value)
        except ImproperlyConfigured as error:
            raise ValueError(str(error)) from error
    return value


def validate_bool(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"must be True or False, not {shown(value)}.")
    return value


def validate_time_zone(value: object) -> str | None:
    """``None`` (Django's ``TIME_ZONE``) or an IANA time zone name."""
    if value is None:
        return None
    try:
        zoneinfo.ZoneInfo(str(value))
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{shown(value)} is not a known time zone.") from None
    return str(value)


def validate_optional_name(value: object) -> str | None:
    """``None`` (off) or a metric name."""
    return None if value is None else validate_name(value)


def validate_view_label(value: object) -> str:
    """A metric name that is also a label value (``UNRESOLVED_VIEW``, ``OTHER_VIEW``: the
    ``view`` label of the middleware's metrics)."""
    return label_value(validate_name(value), "view")


def validate_view_template(value: object) -> str | None:
    """``None`` (off) or a metric name template holding ``{view}``."""
    return _name_template(value, ("{view}",))


def validate_status_template(value: object) -> str | None:
    """``None`` (off) or a metric name template holding ``{view}`` and ``{class}``."""
    return _name_template(value, ("{view}", "{class}"))


def _name_template(template: object, fields: tuple[str, ...]) -> str | None:
    """``None``, or a str holding every one of ``fields`` that names a metric once they are
    filled in."""
    if template is None:
        return None
    if not isinstance(template, str) or not all(field in template for field in fields):
        wanted = " and ".join(f"'{field}'" for field in fields)
        raise ValueError(f"must be None or a str containing {wanted}, not {template!r}.")
    validate_name(template.replace("{view}", "view").replace("{class}", "2xx"))
    return template


def validate_export_token(value: object) -> str | None:
    if value is not None and (not isinstance(value, str) or len(value.strip()) < MIN_TOKEN):
        raise ValueError(
            f"must be None or a str of at least {MIN_TOKEN} characters (a secret, e.g. from "
            "secrets.token_urlsafe())."
        )
    return value


def validate_max_view_counters(value: object) -> int:
    number = positive_int(value, "MAX_VIEW_COUNTERS")
    if number > MAX_VIEW_COUNTERS_LIMIT:
        raise ValueError(f"MAX_VIEW_COUNTERS must be at most {MAX_VIEW_COUNTERS_LIMIT}.")
    return number


def validate_exclude_views(value: object) -> tuple[str, ...]:
    """A list of non-empty ``fnmatch`` patterns (a bare str would be read letter by letter)."""
    if (
        isinstance(value, str)
        or not isinstance(value, list | tuple)
        or not all(isinstance(item, str) and item for item in value)
    ):
        raise ValueError(f"must be a list of non-empty strings, not {shown(value)}.")
    return tuple(value)


def validate_exclude_paths(value: object) -> tuple[str, ...] | None:
    """``None`` (the default paths) or a list of path prefixes, each starting with '/'."""
    if value is None:
        return None
    paths = validate_exclude_views(value)
    if any(not path.startswith("/") for path in paths):
        raise ValueError(f"entries are path prefixes and must start with '/': {shown(value)}.")
    return paths


def validate_dashboard(value: object) -> object:
    """The dashboard's tiles (checked when ``django.contrib.admin`` is installed: the
    dashboard is an admin page)."""
    if apps.is_installed("django.contrib.admin"):
        from .admin.dashboard import resolve_tiles

        resolve_tiles(value)
    return value


def validate_sender(value: object) -> object:
    """A dict (its keys are checked one by one, see :func:`check_sender`)."""
    if not isinstance(value, Mapping):
        raise TypeError(f"must be a dict of the sender's keys, not {shown(value)}.")
    return value
