"""System checks of how the app is wired into the site, beyond its own setting: where the
middleware stands, and whether the Redis it names answers. Ids are stable (see ``checks.py``).

=========================  ==========================================================
django_redis_metrics.W060  the Redis that CONNECTION names does not answer (now)
django_redis_metrics.W061  the middleware runs before AuthenticationMiddleware
=========================  ==========================================================
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.checks import CheckMessage, Warning
from django.utils.module_loading import import_string

from .conf import conf
from .core.connection import REDIS_ERRORS, get_redis_connection, redacted

ID = "django_redis_metrics.{}"
MIDDLEWARE = "django_redis_metrics.middleware.MetricsMiddleware"


def check_redis_answers(**kwargs: Any) -> list[CheckMessage]:
    """W060: one PING (at most the connect timeout, ``SOCKET_CONNECT_TIMEOUT``) to the
    configured Redis. A warning, not an error: the site runs without Redis (writes wait in the
    sender's buffer), but a wrong address would otherwise only show as missing data."""
    try:
        get_redis_connection().ping()
    except REDIS_ERRORS as exc:
        where = redacted(str(conf.CONNECTION))
        return [
            Warning(
                f"The Redis at {where!r} does not answer: {type(exc).__name__}: {exc}",
                hint="Check DJANGO_REDIS_METRICS['CONNECTION'] (and that the server runs); "
                "until it answers, request writes wait in the sender's buffer and the admin's "
                "Metrics pages answer 503.",
                id=ID.format("W060"),
            )
        ]
    except Exception:  # a setting error: reported by check_settings with its own id
        return []
    return []


def check_middleware_order(**kwargs: Any) -> list[CheckMessage]:
    """W061: with ``ACTIVE_USERS`` on, the middleware must come after the one that sets
    ``request.user`` (``AuthenticationMiddleware`` or a subclass), or no one is ever marked."""
    middleware = [str(entry) for entry in getattr(settings, "MIDDLEWARE", None) or ()]
    if MIDDLEWARE not in middleware or conf.ACTIVE_USERS is None:
        return []
    ours = middleware.index(MIDDLEWARE)
    if any(_is_authentication(entry) for entry in middleware[:ours]):
        return []
    return [
        Warning(
            f"{MIDDLEWARE} runs before django.contrib.auth's AuthenticationMiddleware (or "
            "without it): signed-in users are never marked in ACTIVE_USERS.",
            hint="List it after 'django.contrib.auth.middleware.AuthenticationMiddleware' in "
            "MIDDLEWARE, or set ACTIVE_USERS to None.",
            id=ID.format("W061"),
        )
    ]


def _is_authentication(entry: str) -> bool:
    if not apps.is_installed("django.contrib.auth"):
        return False  # its middleware cannot even be imported without it
    from django.contrib.auth.middleware import AuthenticationMiddleware

    try:
        found = import_string(entry)
    except ImportError:
        return False
    return isinstance(found, type) and issubclass(found, AuthenticationMiddleware)
