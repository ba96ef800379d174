"""Turning the ``when`` arguments of every model into epoch seconds, with clear errors."""

from __future__ import annotations

import math
import time
from datetime import date, datetime

When = datetime | int | float | None


def now() -> float:
    return time.time()


def to_timestamp(when: When, what: str = "when") -> float:
    """Epoch seconds for an aware ``datetime``, an ``int``/``float`` epoch, or ``None`` (now)."""
    if when is None:
        return time.time()
    if isinstance(when, bool):
        raise TypeError(f"{what} must be an aware datetime or epoch seconds, not a bool.")
    if isinstance(when, datetime):
        if when.tzinfo is None or when.utcoffset() is None:
            raise ValueError(
                f"{what} must be an aware datetime; got the naive {when.isoformat()}. "
                "Use django.utils.timezone.now() or attach a tzinfo."
            )
        return when.timestamp()
    if isinstance(when, date):
        raise TypeError(f"{what} must be an aware datetime or epoch seconds, not a date: {when}.")
    if isinstance(when, int | float):
        value = float(when)
        if not math.isfinite(value):
            raise ValueError(f"{what} must be a finite number of epoch seconds, not {when!r}.")
        return value
    raise TypeError(
        f"{what} must be an aware datetime or epoch seconds, not {type(when).__name__}: {when!r}."
    )


def slice_start(timestamp: float, precision: int) -> int:
    """The start of the ``precision``-second slice holding ``timestamp`` (epoch-aligned)."""
    return int(timestamp // precision) * precision
