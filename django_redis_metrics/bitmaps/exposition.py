"""The bitmaps' Prometheus family: distinct users in each bitmap's current periods."""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric

from ..core.kind import ReadPlan
from ..exposition.families import NAMESPACE, adder, current_period, first_int
from .model import UniqueBitmap


def bitmap_families(plan: ReadPlan) -> Iterator[Metric]:
    users = GaugeMetricFamily(
        f"{NAMESPACE}_unique_users",
        "Distinct users marked in the current period of each unique-users bitmap.",
        labels=["metric", "period"],
    )
    for bitmap in UniqueBitmap.objects.all():
        for period in bitmap.periods:
            hook = ([("bitcount", (current_period(bitmap, period),))], first_int)
            plan.add(hook, adder(users, bitmap.name, period))
    yield users
