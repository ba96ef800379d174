"""UniqueBitmap registers here, once (``kinds.py`` lists this module): what the cleaner loop, the
Prometheus exposition and the admin need to know of the kind."""

from __future__ import annotations

from ..core.kind import Kind
from .cleaner import clean_bitmaps
from .exposition import bitmap_families
from .model import UniqueBitmap

ENTRY = Kind(
    model=UniqueBitmap,
    cleaner=clean_bitmaps,
    exposition=bitmap_families,
    admin="django_redis_metrics.admin.bitmaps.PAGES",
    archiver="django_redis_metrics.bitmaps.archive.archive_bitmaps",
)
