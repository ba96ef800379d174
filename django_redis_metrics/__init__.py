"""Realtime metrics for Django, stored in Redis: counters, event series, unique-user bitmaps and
unique estimates."""

from __future__ import annotations

from .bitmaps import UniqueBitmap
from .core.batch import Batch
from .core.connection import get_redis_connection
from .counter import Counter
from .estimates import UniqueEstimate
from .events import EventSeries
from .sending.sender import flush

__all__ = [
    "Batch",
    "Counter",
    "EventSeries",
    "UniqueBitmap",
    "UniqueEstimate",
    "flush",
    "get_redis_connection",
]
__version__ = "0.1.0"
