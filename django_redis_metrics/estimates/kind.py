"""UniqueEstimate registers here, once (``kinds.py`` lists this module): what the cleaner loop, the
Prometheus exposition and the admin need to know of the kind."""

from __future__ import annotations

from ..core.kind import Kind
from .cleaner import clean_estimates
from .exposition import estimate_families
from .model import UniqueEstimate

ENTRY = Kind(
    model=UniqueEstimate,
    cleaner=clean_estimates,
    exposition=estimate_families,
    admin="django_redis_metrics.admin.estimates.PAGES",
    archiver="django_redis_metrics.estimates.archive.archive_estimates",
)
