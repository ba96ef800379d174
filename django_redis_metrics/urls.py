"""``path("metrics/", include("django_redis_metrics.urls"))``: the Prometheus exposition, and the
endpoint CI posts annotations to (``annotations/``, with ``ANNOTATION_TOKEN``)."""

from __future__ import annotations

from django.urls import path

from .annotations.views import annotate_endpoint
from .exposition.views import prometheus

app_name = "django_redis_metrics"

urlpatterns = [
    path("", prometheus, name="prometheus"),
    path("annotations/", annotate_endpoint, name="annotate"),
]
