"""The tiny Django site ``bench_faults.py`` serves with gunicorn: one view, the metrics middleware.

Configured from the environment: ``DRM_CONNECTION`` (a Redis URL), ``DRM_CLUSTER`` ("1" for
Redis Cluster) and ``DRM_PREFIX``.

    gunicorn --preload -w 2 --pythonpath benchmarks faults_site:application
"""

from __future__ import annotations

import os

import django
from django.conf import settings
from django.core.handlers.wsgi import WSGIHandler
from django.http import HttpRequest, HttpResponse
from django.urls import path


def page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


urlpatterns = [path("page/", page, name="page")]

settings.configure(
    DEBUG=False,
    SECRET_KEY="bench-faults",
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "django_redis_metrics"],
    MIDDLEWARE=["django_redis_metrics.middleware.MetricsMiddleware"],
    USE_TZ=True,
    LOGGING={
        "version": 1,
        "handlers": {"stderr": {"class": "logging.StreamHandler"}},
        "loggers": {"django_redis_metrics": {"handlers": ["stderr"], "level": "WARNING"}},
    },
    DJANGO_REDIS_METRICS={
        "CONNECTION": os.environ["DRM_CONNECTION"],
        "CLUSTER": os.environ.get("DRM_CLUSTER") == "1",
        "PREFIX": os.environ.get("DRM_PREFIX", "faults"),
    },
)
django.setup()
application = WSGIHandler()
