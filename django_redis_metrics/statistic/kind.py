"""Statistic registers here, once (``kinds.py`` lists this module): what the cleaner loop, the
Prometheus exposition and the admin need to know of the kind."""

from __future__ import annotations

from ..core.kind import Kind
from .cleaner import clean_statistics
from .exposition import statistic_families
from .model import Statistic

ENTRY = Kind(
    model=Statistic,
    cleaner=clean_statistics,
    exposition=statistic_families,
    admin="django_redis_metrics.admin.statistics.PAGES",
    archiver="django_redis_metrics.statistic.archive.archive_statistics",
)
