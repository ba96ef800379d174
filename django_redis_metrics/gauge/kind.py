"""Gauge registers here, once (``kinds.py`` lists this module): what the cleaner loop, the
Prometheus exposition and the admin need to know of the kind."""

from __future__ import annotations

from ..core.kind import Kind
from .cleaner import clean_gauges
from .exposition import gauge_families
from .model import Gauge

ENTRY = Kind(
    model=Gauge,
    cleaner=clean_gauges,
    exposition=gauge_families,
    admin="django_redis_metrics.admin.gauges.PAGES",
    archiver="django_redis_metrics.gauge.archive.archive_gauges",
)
