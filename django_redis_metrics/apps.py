from __future__ import annotations

import sys

from django.apps import AppConfig, apps
from django.core.checks import Tags, register
from django.utils.module_loading import autodiscover_modules


class DjangoRedisMetricsConfig(AppConfig):
    name = "django_redis_metrics"
    verbose_name = "Metrics"
    default_auto_field = "django.db.models.AutoField"

    def ready(self) -> None:
        from . import checks, wiring_checks
        from .alerts import registry as alerts
        from .archive import checks as archive_checks
        from .core.base import Metric
        from .core.queries import declared
        from .funnels import declared as funnels

        register(Tags.compatibility)(checks.check_settings)
        register(Tags.compatibility)(wiring_checks.check_middleware_order)
        register(Tags.compatibility)(archive_checks.check_archive_precisions)
        register()(wiring_checks.check_redis_answers)
        # Like admin.py: every installed app's metrics.py is imported at start-up, so the
        # metrics it declares exist before the first request.
        autodiscover_modules("metrics")
        # ... and the metrics bound to names at their module level are declared: listed by
        # Model.objects (core/queries/declared.py) before they hold data.
        for config in apps.get_app_configs():
            module = sys.modules.get(f"{config.name}.metrics")
            if module is not None:
                declared.collect(module, Metric)
                alerts.collect(module)  # and its alerts (alerts/registry.py)
                funnels.collect(module)  # each with a page in the admin
