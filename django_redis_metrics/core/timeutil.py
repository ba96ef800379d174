"""Turning the ``when`` arguments of every model into epoch seconds, with clear errors."""

from __future__ import annotations

import math
import time
from datetime import date, datetime

from .validation import shown

When = datetime | int | float | None

#: Epoch seconds of 0002-01-01 and 9998-12-31T23:59:59 UTC: a year inside what a datetime can
#: express in any zone (so calendar periods never overflow), and far inside the integers a
#: double (a sorted-set score) holds exactly.
EARLIEST = -62_104_060_800
LATEST = 253_370_764_799


def now() -> float:
    return time.time()


def to_timestamp(when: When, what: str = "when") -> float:
    """Epoch seconds for an aware ``datetime``, an ``int``/``float`` epoch, or ``None`` (now)."""
    if when is None:
        return time.time()
    kind = type(when)
    if (kind is float or kind is int) and EARLIEST <= when <= LATEST:  # type: ignore[operator]
        return float(when)  # type: ignore[arg-type]  # the usual case, before the checks below
    if isinstance(when, bool):
        raise TypeError(f"{what} must be an aware datetime or epoch seconds, not a bool.")
    if isinstance(when, datetime):
        if when.tzinfo is None or when.utcoffset() is None:
            raise ValueError(
                f"{what} must be an aware datetime; got the naive {when.isoformat()}. "
                "Use django.utils.timezone.now() or attach a tzinfo."
            )
        return _in_range(when.timestamp(), when, what)
    if isinstance(when, date):
        raise TypeError(f"{what} must be an aware datetime or epoch seconds, not a date: {when}.")
    if isinstance(when, int | float):
        try:
            value = float(when)
        except OverflowError:  # an int beyond any float: out of range like any other
            return _in_range(math.nan, when, what)
        if not math.isfinite(value):
            raise ValueError(f"{what} must be a finite number of epoch seconds, not {shown(when)}.")
        return _in_range(value, when, what)
    raise TypeError(
        f"{what} must be an aware datetime or epoch seconds, "
        f"not {type(when).__name__}: {shown(when)}."
    )


def _in_range(value: float, when: object, what: str) -> float:
    if not EARLIEST <= value <= LATEST:
        raise ValueError(f"{what} must fall within the years 2 to 9998, not {shown(when)}.")
    return value


def slice_start(timestamp: float, precision: int) -> int:
    """The start of the ``precision``-second slice holding ``timestamp`` (epoch-aligned)."""
    return int(timestamp // precision) * precision


def slice_starts(precision: int, count: int, until: float) -> list[int]:
    """The starts of the ``count`` slices of ``precision`` ending with the one holding
    ``until``, oldest first."""
    last = slice_start(until, precision)
    return [last - precision * i for i in range(count - 1, -1, -1)]
