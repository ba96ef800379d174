"""The bitmaps' Prometheus families: distinct users in the current periods of each series."""

from __future__ import annotations

from ..core.steps import Op, Steps
from ..exposition.families import Draft
from ..exposition.periodic import periodic_families
from .keys import KIND


def bitmap_families() -> Steps[list[Draft]]:
    return periodic_families(
        KIND,
        lambda key: Op("bitcount", key),
        "Unique-users bitmap {name!r}: distinct users marked in the current period.",
    )
