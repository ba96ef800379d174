"""The "Metrics" section of the admin: pages over Redis, no database table (``options.py``)."""

from .options import CounterAdmin, EventSeriesAdmin, UniqueBitmapAdmin

__all__ = ["CounterAdmin", "EventSeriesAdmin", "UniqueBitmapAdmin"]
