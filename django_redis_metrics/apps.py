from __future__ import annotations

from django.apps import AppConfig
from django.core.checks import Tags, register


class DjangoRedisMetricsConfig(AppConfig):
    name = "django_redis_metrics"
    verbose_name = "Metrics"
    default_auto_field = "django.db.models.AutoField"

    def ready(self) -> None:
        from . import checks

        register(Tags.compatibility)(checks.check_settings)
