"""What the kinds' Prometheus families share: the namespace, and the reads of simple counts.

Each kind builds its own families (``counter/exposition.py``, ...), queueing its reads on the
scrape's plan (``collector.Plan``); the collector gathers them from the registry of kinds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..core.periodic import PeriodicMetric
from ..core.periods import period_class
from ..core.steps import Op, Steps

#: Prefix of every family this app exposes.
NAMESPACE = "django_redis_metrics"


def current_period(metric: PeriodicMetric, period: str) -> Any:
    """The key of ``metric``'s current ``period`` (hour, day, week or month)."""
    return metric.key(period_class(period).containing(None))


def count_steps(read: Op) -> Steps[int]:
    """One read whose reply is a count."""
    return int((yield read))


def adder(family: Any, *labels: str) -> Callable[[Any], None]:
    """Adds the parsed answer to ``family`` as the sample of ``labels``."""
    return lambda value: family.add_metric(list(labels), value)
