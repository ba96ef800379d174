"""Realtime metrics for Django, stored in Redis: counters, event series and unique-user bitmaps."""

from __future__ import annotations

from .batch import Batch
from .bitmaps import UniqueBitmap
from .connection import get_redis_connection
from .counter import Counter
from .events import EventSeries

__all__ = ["Batch", "Counter", "EventSeries", "UniqueBitmap", "get_redis_connection"]
__version__ = "0.1.0"
