"""Settings for the test suite. Every test that talks to Redis gets a private server from
``conftest.py``; the default CONNECTION points at a port nothing listens on, so a test that
forgets its fixture fails instead of touching someone's Redis.

``DRM_TEST_TIME_ZONE`` runs the suite in another zone: ``scripts/midnight_zone.py`` names the
one where a day has just begun, to try the suite at "just after midnight" at any hour."""

import os
import socket
from typing import Any

SECRET_KEY = "tests-only-not-secret"
DEBUG = False
USE_TZ = True
TIME_ZONE = os.environ.get("DRM_TEST_TIME_ZONE", "UTC")
INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_redis_metrics",
]
DATABASES: dict[str, dict[str, Any]] = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}
}


def _postgres_answers(host: str, port: int) -> bool:
    """Whether a PostgreSQL server listens there and psycopg is installed."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return False
    try:
        socket.create_connection((host, port), timeout=0.5).close()
    except OSError:
        return False
    return True


# The archive's tests run on SQLite and on PostgreSQL ("postgres"), when a server answers at
# DRM_POSTGRES_HOST:DRM_POSTGRES_PORT (default 127.0.0.1:5432, trust authentication, user
# DRM_POSTGRES_USER or "postgres"). The test database is created and dropped by the run and
# named after its process, so two runs at once never share one. Without a server the alias is
# absent and those tests skip, saying why (tests/archive/conftest.py).
POSTGRES_HOST = os.environ.get("DRM_POSTGRES_HOST", "127.0.0.1")
POSTGRES_PORT = int(os.environ.get("DRM_POSTGRES_PORT", "5432"))
if _postgres_answers(POSTGRES_HOST, POSTGRES_PORT):
    DATABASES["postgres"] = {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": POSTGRES_HOST,
        "PORT": POSTGRES_PORT,
        "USER": os.environ.get("DRM_POSTGRES_USER", "postgres"),
        "NAME": "postgres",
        "TEST": {"NAME": f"drm_test_{os.getpid()}"},
    }
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]
STATIC_URL = "/static/"
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
DJANGO_REDIS_METRICS = {"CONNECTION": "redis://127.0.0.1:1/0", "SOCKET_CONNECT_TIMEOUT": 0.5}
