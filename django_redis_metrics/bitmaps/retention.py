"""How long a bitmap keeps its periods (``BITMAP_RETENTION``), as marks enforce it.

A mark gives each period key it creates an expiry at the end of that period's retention (the
moment the cleaner would drop it), and never writes a period whose retention is already over:
memory stays flat with no cleaner running. Any kind of metric kept per calendar period can use
:func:`period_bounds` the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from ..conf import conf
from ..core.periods import Period
from ..core.retention import MAX_PERIODS_KEPT, period_retention, validate_periods_kept

#: Most periods of each kind kept: about 100 years of each (the bound every metric kept per
#: calendar period shares).
MAX_KEEP: dict[str, int] = MAX_PERIODS_KEPT


def validate_retention(value: object) -> dict[str, int]:
    """``BITMAP_RETENTION``: period name -> number of periods kept, ``[1, MAX_KEEP]``."""
    return validate_periods_kept(value)


@lru_cache(maxsize=64)
def _validated(items: tuple[tuple[str, object], ...]) -> dict[str, int]:
    return validate_retention(dict(items))


def retention() -> Mapping[str, int]:
    """``BITMAP_RETENTION`` now (defaults filled in), validated once per distinct value."""
    value = conf.BITMAP_RETENTION
    try:
        return _validated(tuple(sorted(value.items())))
    except TypeError as exc:  # unhashable values: let the validator say what is wrong
        if "unhashable" not in str(exc):
            raise
        return validate_retention(value)


@lru_cache(maxsize=1024)
def period_bounds(period: Period, keep: int) -> tuple[int, float]:
    """``(expire_at_ms, oldest_kept_start)`` of ``period`` (see ``period_retention``): marks
    come in time order, so the few current periods are computed once."""
    return period_retention(period, keep)
