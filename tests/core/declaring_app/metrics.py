"""Declared at start-up by the app's ``ready()``, as a site's ``metrics.py`` is."""

from django_redis_metrics import Counter, Statistic

signups = Counter("declared.signups", precisions=[60, 86400])
latency = Statistic("declared.latency", labels=("view",))
NOT_A_METRIC = "declared.nothing"
