"""Unmanaged models: they give the admin its "Metrics" section and the permission to see it.

No table is ever created (``managed = False``); the data lives in Redis. The migration only
records the models so that Django creates their content types and the ``view_metrics``
permission, which every admin page and JSON endpoint of the app requires.
"""

from __future__ import annotations

from django.db import models

#: The permission every metrics page requires (superusers have it implicitly).
PERMISSION = "django_redis_metrics.view_metrics"


class CounterMetric(models.Model):
    class Meta:
        managed = False
        default_permissions = ()
        permissions = (("view_metrics", "Can view the metrics pages"),)
        verbose_name = "counter"
        verbose_name_plural = "counters"


class EventSeriesMetric(models.Model):
    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "event series"
        verbose_name_plural = "event series"


class UniqueBitmapMetric(models.Model):
    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "unique users bitmap"
        verbose_name_plural = "unique users"


class DashboardMetric(models.Model):
    """The "Dashboard" entry of the section: the site at a glance (``admin/dashboard.py``)."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "dashboard"
        verbose_name_plural = "dashboard"


class FunnelMetric(models.Model):
    """The "Funnels" entry: a page per funnel declared in ``metrics.py`` (``admin/funnels.py``)."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "funnel"
        verbose_name_plural = "funnels"


class ViewsMetric(models.Model):
    """The "Views" entry: response times and errors per view (``admin/views.py``)."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "views"
        verbose_name_plural = "views"


class StatisticMetric(models.Model):
    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "statistic"
        verbose_name_plural = "statistics"


class GaugeMetric(models.Model):
    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "gauge"
        verbose_name_plural = "gauges"


class UniqueEstimateMetric(models.Model):
    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "unique estimate"
        verbose_name_plural = "unique estimates"


class AlertsMetric(models.Model):
    """The "Alerts" entry: each declared alert's state (``admin/alerts.py``)."""

    class Meta:
        managed = False
        default_permissions = ()
        verbose_name = "alerts"
        verbose_name_plural = "alerts"


# The archive's tables (real tables, in the site's database): ``archive/models.py``.
from .archive.models import (  # noqa: E402
    ArchiveCursor,
    ArchivedBreakdown,
    ArchivedPeriod,
    ArchivedSlice,
)

__all__ = [
    "PERMISSION",
    "AlertsMetric",
    "ArchiveCursor",
    "ArchivedBreakdown",
    "ArchivedPeriod",
    "ArchivedSlice",
    "CounterMetric",
    "DashboardMetric",
    "EventSeriesMetric",
    "FunnelMetric",
    "GaugeMetric",
    "StatisticMetric",
    "UniqueBitmapMetric",
    "UniqueEstimateMetric",
    "ViewsMetric",
]
