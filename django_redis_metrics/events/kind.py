"""EventSeries registers here, once (``kinds.py`` lists this module): what the cleaner loop, the
Prometheus exposition and the admin need to know of the kind. Event series have no
family in the exposition."""

from __future__ import annotations

from ..core.kind import Kind
from .cleaner import clean_event_series
from .model import EventSeries

ENTRY = Kind(
    model=EventSeries,
    cleaner=clean_event_series,
    exposition=None,
    admin="django_redis_metrics.admin.events.PAGES",
    archiver="django_redis_metrics.events.archive.archive_events",
)
