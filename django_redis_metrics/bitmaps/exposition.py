"""The bitmaps' Prometheus family: distinct users in each bitmap's current periods."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from ..core.kind import ReadPlan
from ..core.steps import Op
from ..exposition.families import NAMESPACE, adder, count_steps, current_period
from .model import UniqueBitmap


def bitmap_families(plan: ReadPlan) -> Iterator[Metric]:
    users = GaugeMetricFamily(
        f"{NAMESPACE}_unique_users",
        "Distinct users marked in the current period of each unique-users bitmap.",
        labels=["metric", "period"],
    )
    for bitmap in UniqueBitmap.objects.all():
        for period in bitmap.periods:
            read = count_steps(Op("bitcount", current_period(bitmap, period)))
            plan.add(read, adder(users, bitmap.name, period))
    yield users
