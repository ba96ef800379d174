"""Key naming: every key lives under ``PREFIX``, and all keys of one metric share one hash tag.

A metric's keys look like ``<prefix>:<kind>:{<name>}:<part>``. Names may not contain braces, so
the ``{...}`` segment is exactly the name: two different metrics can never share a key, and on
Redis Cluster every key of one metric hashes to the same slot (so MULTI/EXEC, Lua and BITOP over
one metric stay in one slot). Catalogues (``<prefix>:catalogue:<kind>``) carry no braces and so
can never collide with a metric's key. Temporary keys live in their own namespace,
``<prefix>:tmp:{<name>}:<kind>:<token>``: no kind is ``tmp`` and a kind never starts with a
brace, so no metric key, whatever its name or the values in it, matches ``<prefix>:tmp:{*``.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from ..conf import conf
from .validation import shown

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
        raise TypeError(f"The {what} must be a str, not {type(name).__name__}: {shown(name)}")
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


#: The namespace of temporary keys (``<prefix>:tmp:{<name>}:...``).
TEMP = "tmp"


def temp_key(kind: str, name: str, token: str) -> str:
    """A temporary key of a metric, in its slot (same hash tag) but in the temporary namespace;
    callers must always give it a TTL."""
    return f"{conf.PREFIX}:{TEMP}:{{{name}}}:{kind}:{token}"


def glob_escape(text: str) -> str:
    """``text`` matched literally by a SCAN pattern."""
    for char in "\\[]*?":
        text = text.replace(char, "\\" + char)
    return text


def pattern(kind: str | None = None) -> str:
    """A SCAN pattern matching the app's keys (of one kind, if given)."""
    prefix = glob_escape(conf.PREFIX)
    return f"{prefix}:{kind}:*" if kind else f"{prefix}:*"


def temp_pattern() -> str:
    """A SCAN pattern matching the temporary keys of the app, and nothing else."""
    return f"{glob_escape(conf.PREFIX)}:{TEMP}:{{*"


def to_str(value: bytes | str) -> str:
    """Decode a Redis reply, whether or not the client decodes responses."""
    return value.decode() if isinstance(value, bytes) else value
