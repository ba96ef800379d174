"""How event fields travel: values tagged with their type, field names checked, timestamps
written so Redis parses back the very same double, and windows indexed exactly as Lua does."""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

from ..core.keys import to_str
from ..core.timeutil import When, to_timestamp
from ..core.validation import shown

#: Field names an event may not use: ``id`` and ``timestamp`` name what every returned event
#: holds; ``when`` and ``batch`` are ``record``'s own arguments (``record_many`` reads ``when``).
RESERVED_FIELDS = frozenset({"id", "timestamp", "when", "batch"})
MAX_FIELD_LENGTH = 200

Value = str | int | float | bool | date | datetime | Decimal

#: One-letter type tags of stored values: ``<tag>:<text>``.
_DECODERS: dict[str, Any] = {
    "s": str,
    "i": int,
    "f": float,
    "b": lambda text: text == "True",
    "n": Decimal,
    "d": date.fromisoformat,
    "t": datetime.fromisoformat,
}


def encode_value(field: str, value: object) -> tuple[str, str]:
    """``(stored value, text)``: the value tagged with its type, and its untagged text.

    The text is what indexes and ``count_by`` group by: ``str(value)`` for str, int, bool
    and Decimal, ``repr`` for float, ISO 8601 for dates and datetimes.
    """
    if isinstance(value, str):
        tag, text = "s", value
    elif isinstance(value, bool):
        tag, text = "b", str(value)
    elif isinstance(value, int):
        tag, text = "i", str(int(value))  # an IntEnum is its number, whatever its str()
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Field {shown(field)} must be a finite number, not {shown(value)}.")
        tag, text = "f", repr(value)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"Field {shown(field)} must be a finite number, not {shown(value)}.")
        tag, text = "n", str(value)
    elif isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"Field {shown(field)} must be an aware datetime; "
                f"got the naive {value.isoformat()}."
            )
        tag, text = "t", value.isoformat()
    elif isinstance(value, date):
        tag, text = "d", value.isoformat()
    else:
        raise TypeError(
            f"Field {shown(field)} must be a str, int, float, bool, Decimal, date or aware "
            f"datetime, not {type(value).__name__}: {shown(value)}."
        )
    return f"{tag}:{text}", text


def decode_value(stored: bytes | str) -> Value:
    """The Python value of a stored ``<tag>:<text>``; an untagged value comes back as str."""
    raw = to_str(stored)
    decoder = _DECODERS.get(raw[:1]) if raw[1:2] == ":" else None
    if decoder is None:
        return raw
    try:
        value: Value = decoder(raw[2:])
    except ValueError:
        return raw
    return value


def utf8(text: str, what: str) -> bytes:
    """``text`` encoded as Redis will store it; a clear ValueError if it cannot be (a lone
    surrogate), raised before anything is sent."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} cannot be encoded as UTF-8 ({exc.reason} at position {exc.start}): "
            f"{shown(text)}."
        ) from None


def validate_field_name(name: object, *, indexed: bool = False) -> str:
    """A field name: a non-empty str, not reserved, no control characters, valid UTF-8."""
    if not isinstance(name, str):
        raise TypeError(f"Field names must be str, not {type(name).__name__}: {name!r}.")
    if not name:
        raise ValueError("Field names must not be empty.")
    if name in RESERVED_FIELDS:
        raise ValueError(
            f"{name!r} is reserved: every returned event holds 'id' and 'timestamp', and "
            "'when' and 'batch' are record()'s own arguments; rename the field."
        )
    if len(name) > MAX_FIELD_LENGTH:
        raise ValueError(f"Field name {name[:40]!r}... is longer than {MAX_FIELD_LENGTH}.")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name):
        raise ValueError(f"Field name {name!r} must not contain control characters.")
    if indexed and ":" in name:
        raise ValueError(f"Indexed field name {name!r} must not contain ':'.")
    utf8(name, "Field name")
    return name


#: Field names seen valid; validating each event's names again is the costliest step of imports.
valid_field = lru_cache(maxsize=4096)(validate_field_name)


def validate_window(window: object) -> int | float:
    if isinstance(window, bool) or not isinstance(window, int | float):
        raise TypeError(f"window must be a number of seconds, not {shown(window)}.")
    if not math.isfinite(window) or window <= 0:
        raise ValueError(f"window must be a positive number of seconds, not {shown(window)}.")
    if isinstance(window, float) and window.is_integer():
        return int(window)
    return window


def window_index(timestamp: float, window: int | float) -> int:
    """``k`` with ``k * window <= timestamp < (k + 1) * window``, exactly (as Lua computes it)."""
    quotient = timestamp / window
    if not math.isfinite(quotient):
        raise ValueError(f"window {shown(window)} is too small for the time {shown(timestamp)}.")
    k = math.floor(quotient)
    if k * window > timestamp:
        k -= 1
    elif (k + 1) * window <= timestamp:
        k += 1
    return k


def score(value: float | int) -> str:
    """A timestamp as Redis parses it back to the very same double."""
    return repr(float(value)) if isinstance(value, float) else str(value)


def time_range(start: When, end: When) -> tuple[float, float]:
    lo = to_timestamp(start, "start")
    hi = to_timestamp(end, "end")
    if lo > hi:
        raise ValueError(f"start ({lo}) must not be after end ({hi}).")
    return lo, hi


def bound(value: float) -> str:
    """A score bound for ZRANGEBYSCORE and friends: ``+inf``/``-inf`` or an exact score."""
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return score(value)


def decode_event(raw: Sequence[Any]) -> dict[str, Any]:
    """An event as the read scripts return it: id, timestamp, then field/value pairs."""
    event: dict[str, Any] = {"id": int(raw[0]), "timestamp": float(raw[1])}
    for i in range(2, len(raw), 2):
        event[to_str(raw[i])] = decode_value(raw[i + 1])
    return event
