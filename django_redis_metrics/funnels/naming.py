"""A funnel's name: what the admin lists it by."""

from __future__ import annotations

from ..core.validation import shown

#: Longest funnel name.
MAX_NAME = 200


def checked_name(name: object) -> str | None:
    """``name`` if ``None`` or a non-empty printable str of at most ``MAX_NAME`` characters."""
    if name is None:
        return None
    if not isinstance(name, str):
        raise TypeError(f"A funnel's name is a str, not {shown(name)}.")
    if not name or len(name) > MAX_NAME or not name.isprintable():
        raise ValueError(
            f"A funnel's name is 1 to {MAX_NAME} printable characters, not {shown(name)}."
        )
    return name
