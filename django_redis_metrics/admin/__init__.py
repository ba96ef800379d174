"""The "Metrics" section of the admin: pages over Redis, no database table (``options.py``)."""

from .options import CounterAdmin, DashboardAdmin, EventSeriesAdmin, UniqueBitmapAdmin

__all__ = ["CounterAdmin", "DashboardAdmin", "EventSeriesAdmin", "UniqueBitmapAdmin"]
