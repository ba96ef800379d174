"""``path("metrics/", include("django_redis_metrics.urls"))``: the Prometheus exposition."""

from __future__ import annotations

from django.urls import path

from .exposition.views import prometheus

app_name = "django_redis_metrics"

urlpatterns = [path("", prometheus, name="prometheus")]
