"""The "Metrics" section of the admin: pages over Redis, no database table (``options.py``)."""

from .options import KIND_ADMINS, DashboardAdmin, KindAdmin, MetricsAdmin, ViewsAdmin

__all__ = ["KIND_ADMINS", "DashboardAdmin", "KindAdmin", "MetricsAdmin", "ViewsAdmin"]
