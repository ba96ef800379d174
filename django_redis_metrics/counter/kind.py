"""Counter registers here, once (``kinds.py`` lists this module): what the cleaner loop, the
Prometheus exposition and the admin need to know of the kind."""

from __future__ import annotations

from ..core.kind import Kind
from .cleaner import clean_counters
from .exposition import counter_families
from .model import Counter

ENTRY = Kind(
    model=Counter,
    cleaner=clean_counters,
    exposition=counter_families,
    admin="django_redis_metrics.admin.counters.PAGES",
    archiver="django_redis_metrics.counter.archive.archive_counters",
)
