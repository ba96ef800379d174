"""Checks every model shares: ints that are not bools, finite positive numbers of seconds.

Each raises ``TypeError`` for a value of the wrong type and ``ValueError`` for one out of range,
with a message naming ``what`` was wrong, before anything is sent to Redis.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Iterable
from decimal import Decimal
from typing import Any, TypeGuard

#: How error messages show a refused value: its start and its type, never all of it (a
#: megabyte string would otherwise be copied into the message, the logs and the error page).
_SHORT = reprlib.Repr()  # keyword arguments need Python 3.12
_SHORT.maxstring, _SHORT.maxlong, _SHORT.maxother = 60, 40, 60


def shown(value: object) -> str:
    """``repr(value)``, cut to about 60 characters (``'xxx...xxx'``), for error messages."""
    if isinstance(value, int) and value.bit_length() > 128:
        # repr() of an int over 4,300 digits raises: say its size instead.
        return f"an int of {value.bit_length()} bits"
    return _SHORT.repr(value)


def is_int(value: object) -> TypeGuard[int]:
    """An ``int`` (``IntEnum`` and ``IntegerChoices`` members included), never a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def integer(
    value: object,
    what: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    unit: str = "",
) -> int:
    """``value`` as a plain ``int``, from ``minimum`` to ``maximum`` when given; ``unit`` (e.g.
    "seconds") names what the int counts in the error message."""
    if not is_int(value):
        kind = f"an int number of {unit}" if unit else "an int"
        raise TypeError(f"{what} must be {kind}, not {type(value).__name__}: {shown(value)}.")
    number = int(value)  # an IntEnum member becomes a plain int
    if minimum is not None and number < minimum:
        qualifier = "positive" if minimum == 1 else f"at least {minimum}"
        raise ValueError(f"{what} must be {qualifier}, not {shown(number)}.")
    if maximum is not None and number > maximum:
        raise ValueError(f"{what} must be at most {maximum}, not {shown(number)}.")
    return number


#: Types iterating as characters or bytes (ints): never a collection of values or precisions.
_TEXT = (str, bytes, bytearray, memoryview)


def iterable(value: object, what: str, of: str) -> Iterable[Any]:
    """``value`` if it is a collection (of ``of``, as the message says); ``TypeError`` for text
    and bytes (whose items are characters or small ints: ``b"1"`` would be the value 49) and
    for a non-iterable."""
    if isinstance(value, _TEXT) or not isinstance(value, Iterable):
        raise TypeError(
            f"{what} must be a sequence of {of}, not {type(value).__name__}: {shown(value)}."
        )
    return value


def boolean(value: object, what: str) -> bool:
    """``value`` if it is ``True`` or ``False`` (a flag given anything else is a mistake)."""
    if not isinstance(value, bool):
        raise TypeError(
            f"{what} must be True or False, not {type(value).__name__}: {shown(value)}."
        )
    return value


def positive_int(value: object, what: str) -> int:
    return integer(value, what, minimum=1)


def seconds(value: object, what: str, *, allow_zero: bool = False) -> float:
    """A finite, positive (or, with ``allow_zero``, non-negative) number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number of seconds, not {shown(value)}.")
    try:
        number = float(value)
    except OverflowError:  # an int beyond any float
        number = math.inf
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        qualifier = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{what} must be a {qualifier} number of seconds, not {shown(value)}.")
    return number


# The same checks of one setting's value, for the settings table (``conf.py``): the system
# check names the setting, so the message says "the value".


#: Most connections one event loop's async client may open (Redis' default maxclients: 10,000).
MAX_CONNECTIONS = 10_000


def connection_count(value: object) -> int:
    """A positive int of connections, at most ``MAX_CONNECTIONS``."""
    return integer(value, "the value", minimum=1, maximum=MAX_CONNECTIONS)


def positive_seconds(value: object) -> float:
    return seconds(value, "the value")


def non_negative_seconds(value: object) -> float:
    return seconds(value, "the value", allow_zero=True)


def positive_count(value: object) -> int:
    return positive_int(value, "the value")


#: Most replicas the sender may wait for (``SENDER["REPLICAS"]``).
MAX_REPLICAS = 16


def replica_count(value: object) -> int:
    """An int of replicas from 0 to ``MAX_REPLICAS``."""
    return integer(value, "the value", minimum=0, maximum=MAX_REPLICAS)


#: Highest cap on a labelled metric's series (``MAX_SERIES``, ``max_series=``).
MAX_SERIES_LIMIT = 100_000


def series_cap(value: object, what: str = "the value") -> int:
    """A cap on a labelled metric's series: a positive int up to ``MAX_SERIES_LIMIT``."""
    return integer(value, what, minimum=1, maximum=MAX_SERIES_LIMIT)


#: Largest magnitude of a measured value (statistics, gauges): integers up to it are exact as
#: doubles, and sums of squares stay far from overflow.
MAX_MEASURE = 2**53


def measure(value: object, what: str = "value") -> float:
    """A finite int, float or ``Decimal`` within ±2**53, as a float (``bool`` refused)."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise TypeError(
            f"{what} must be a finite int, float or Decimal, "
            f"not {type(value).__name__}: {shown(value)}."
        )
    try:
        number = float(value)
    except (OverflowError, ValueError):  # an int beyond any float; a signalling NaN
        number = math.nan
    if not math.isfinite(number):
        raise ValueError(f"{what} must be a finite number, not {shown(value)}.")
    if abs(number) > MAX_MEASURE:
        raise ValueError(f"{what} must be within ±2**53, not {shown(value)}.")
    return number
