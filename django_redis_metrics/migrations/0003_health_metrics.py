from __future__ import annotations

from django.db import migrations, models

#: ``(model, verbose name, plural)`` of the unmanaged models of the site-health pages.
MODELS = (
    ("ViewsMetric", "views", "views"),
    ("StatisticMetric", "statistic", "statistics"),
    ("GaugeMetric", "gauge", "gauges"),
    ("UniqueEstimateMetric", "unique estimate", "unique estimates"),
)


class Migration(migrations.Migration):
    """The Views, Statistic, Gauge and UniqueEstimate pages' unmanaged models: entries, no
    tables."""

    dependencies = [("django_redis_metrics", "0002_dashboardmetric")]  # noqa: RUF012 (as Django writes it)

    operations = tuple(
        migrations.CreateModel(
            name=name,
            fields=[("id", models.AutoField(primary_key=True, serialize=False))],
            options={
                "managed": False,
                "default_permissions": (),
                "verbose_name": verbose,
                "verbose_name_plural": plural,
            },
        )
        for name, verbose, plural in MODELS
    )
