"""The estimates' Prometheus families: distinct items in the current periods of each series."""

from __future__ import annotations

from ..core.steps import Op, Steps
from ..exposition.families import Draft
from ..exposition.periodic import periodic_families
from .keys import KIND


def estimate_families() -> Steps[list[Draft]]:
    # Through execute_command: redis-py's cluster pipeline refuses its pfcount(), which may
    # name keys in several slots (one key always has one).
    return periodic_families(
        KIND,
        lambda key: Op("execute_command", "PFCOUNT", key),
        "HyperLogLog estimate {name!r}: distinct items added in the current period "
        "(about 0.81 % standard error).",
    )
