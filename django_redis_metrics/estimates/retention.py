"""How long an estimate keeps its periods (``ESTIMATE_RETENTION``), as writes enforce it.

Like a bitmap's: a write gives each period key it creates an expiry at the end of that period's
retention, and never writes a period whose retention is already over, so memory stays flat
with no cleaner running. A range (``between``) reads only the keys still retained.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from functools import lru_cache

from ..conf import conf
from ..core.periods import Period
from ..core.retention import period_retention, validate_periods_kept
from ..defaults import DEFAULT_ESTIMATE_RETENTION


def validate_retention(value: object) -> dict[str, int]:
    """``ESTIMATE_RETENTION``: period name -> periods kept (counting the current one)."""
    return validate_periods_kept(value)


@lru_cache(maxsize=64)
def _validated(items: tuple[tuple[object, object], ...]) -> dict[str, int]:
    return {**DEFAULT_ESTIMATE_RETENTION, **validate_retention(dict(items))}


def retention() -> Mapping[str, int]:
    """``ESTIMATE_RETENTION`` now (defaults filled in), validated once per distinct value."""
    value = conf.get("ESTIMATE_RETENTION")
    if not isinstance(value, dict):
        validate_retention(value)  # raises, saying what is wrong
    try:
        return _validated(tuple(sorted(value.items(), key=repr)))
    except TypeError as exc:  # unhashable values: let the validator say what is wrong
        if "unhashable" not in str(exc):
            raise
        return {**DEFAULT_ESTIMATE_RETENTION, **validate_retention(value)}


@lru_cache(maxsize=1024)
def period_bounds(period: Period, keep: int) -> tuple[int, float]:
    """``(expire_at_ms, oldest_kept_start)`` of ``period`` (see ``period_retention``): writes
    come in time order, so the few current periods are computed once."""
    return period_retention(period, keep)


def is_retained(period: Period, keep: Mapping[str, int], now: float | None = None) -> bool:
    """Whether ``period``'s key can still hold data: its retention is not over at ``now``."""
    expires_ms, _oldest = period_bounds(period, keep[period.name])
    moment = time.time() if now is None else now
    return expires_ms > math.floor(moment * 1000)
