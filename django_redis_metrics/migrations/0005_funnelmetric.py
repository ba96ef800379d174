from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    """The Funnels page's unmanaged model: its admin entry, no table."""

    dependencies = [("django_redis_metrics", "0004_alertsmetric")]  # noqa: RUF012 (as Django writes it)

    operations = (
        migrations.CreateModel(
            name="FunnelMetric",
            fields=[("id", models.AutoField(primary_key=True, serialize=False))],
            options={
                "managed": False,
                "default_permissions": (),
                "verbose_name": "funnel",
                "verbose_name_plural": "funnels",
            },
        ),
    )
