"""The "Metrics" section of the admin: pages over Redis, no database table (``options.py``)."""

from .options import (
    CounterAdmin,
    DashboardAdmin,
    EventSeriesAdmin,
    GaugeAdmin,
    StatisticAdmin,
    UniqueBitmapAdmin,
    UniqueEstimateAdmin,
    ViewsAdmin,
)

__all__ = [
    "CounterAdmin",
    "DashboardAdmin",
    "EventSeriesAdmin",
    "GaugeAdmin",
    "StatisticAdmin",
    "UniqueBitmapAdmin",
    "UniqueEstimateAdmin",
    "ViewsAdmin",
]
