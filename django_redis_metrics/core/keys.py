"""Key naming: every key lives under ``PREFIX``, and all keys of one metric share one hash tag.

A metric's keys look like ``<prefix>:<kind>:{<name>}:<part>``. Names may not contain braces, so
the ``{...}`` segment is exactly the name: two different metrics can never share a key, and on
Redis Cluster every key of one metric hashes to the same slot (so MULTI/EXEC, Lua and BITOP over
one metric stay in one slot). Catalogues (``<prefix>:catalogue:<kind>``) carry no braces and so
can never collide with a metric's key.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from ..conf import conf

MAX_NAME_LENGTH = 200


@lru_cache(maxsize=4096)  # metric names repeat on every write; the scan is per character
def _bad_character(value: str) -> str | None:
    for char in value:
        if char in "{}":
            return "braces ('{' or '}')"
        category = unicodedata.category(char)
        if category in ("Cc", "Cf", "Zl", "Zp"):
            return f"a control character ({char!r})"
        if category == "Cs":
            return f"a lone surrogate ({char!r}), which cannot be encoded"
    return None


def validate_name(name: object, what: str = "metric name") -> str:
    """``name`` if it can name a metric, else a ``TypeError``/``ValueError`` saying why."""
    if not isinstance(name, str):
        raise TypeError(f"The {what} must be a str, not {type(name).__name__}: {name!r}")
    if not name or not name.strip():
        raise ValueError(f"The {what} must not be empty or blank: {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise ValueError(
            f"The {what} is {len(name)} characters long; at most {MAX_NAME_LENGTH} are allowed."
        )
    bad = _bad_character(name)
    if bad:
        raise ValueError(f"The {what} {name!r} must not contain {bad}.")
    return name


def validate_prefix(prefix: object) -> str:
    """A prefix follows the name rules and, in addition, may not contain ':' at its ends."""
    value = validate_name(prefix, what="PREFIX")
    if value != value.strip(":"):
        raise ValueError(f"The PREFIX {value!r} must not start or end with ':'.")
    return value


def metric_key(kind: str, name: str, *parts: object) -> str:
    """The key of one part of a metric, e.g. ``metrics:counter:{hits}:60``."""
    tail = "".join(f":{part}" for part in parts)
    return f"{conf.PREFIX}:{kind}:{{{name}}}{tail}"


def catalogue_key(kind: str) -> str:
    """The sorted set listing every metric of one kind (score 0, ordered by name)."""
    return f"{conf.PREFIX}:catalogue:{kind}"


def temp_key(kind: str, name: str, token: str) -> str:
    """A temporary key in the metric's slot; callers must always give it a TTL."""
    return metric_key(kind, name, "tmp", token)


def pattern(kind: str | None = None) -> str:
    """A SCAN pattern matching the app's keys (of one kind, if given)."""
    prefix = conf.PREFIX.replace("[", r"\[").replace("*", r"\*").replace("?", r"\?")
    return f"{prefix}:{kind}:*" if kind else f"{prefix}:*"


def to_str(value: bytes | str) -> str:
    """Decode a Redis reply, whether or not the client decodes responses."""
    return value.decode() if isinstance(value, bytes) else value
