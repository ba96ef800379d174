from __future__ import annotations

from django.db import migrations, models


class Migration(migrations.Migration):
    """Unmanaged models (no tables): content types and the ``view_metrics`` permission."""

    initial = True
    dependencies = []  # noqa: RUF012 (as Django writes it)

    operations = (
        migrations.CreateModel(
            name="CounterMetric",
            fields=[("id", models.AutoField(primary_key=True, serialize=False))],
            options={
                "managed": False,
                "default_permissions": (),
                "permissions": (("view_metrics", "Can view the metrics pages"),),
                "verbose_name": "counter",
                "verbose_name_plural": "counters",
            },
        ),
        migrations.CreateModel(
            name="EventSeriesMetric",
            fields=[("id", models.AutoField(primary_key=True, serialize=False))],
            options={
                "managed": False,
                "default_permissions": (),
                "verbose_name": "event series",
                "verbose_name_plural": "event series",
            },
        ),
        migrations.CreateModel(
            name="UniqueBitmapMetric",
            fields=[("id", models.AutoField(primary_key=True, serialize=False))],
            options={
                "managed": False,
                "default_permissions": (),
                "verbose_name": "unique users bitmap",
                "verbose_name_plural": "unique users",
            },
        ),
    )
