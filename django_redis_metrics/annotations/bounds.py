"""What an annotation may hold, checked before anything is sent: its text, its tags, and the
settings that bound them (``ANNOTATION_*``, validated here for the system checks E060-E063).

Text is user data shown on charts (always escaped there) and in exports; tags are short
identifiers, so they can be filtered on and never start a spreadsheet formula.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from ..core.validation import integer, shown

#: Most tags one annotation carries, and most characters per tag.
MAX_TAGS = 10
MAX_TAG_LENGTH = 50
#: A tag: a letter, digit or underscore, then those or ``. : / -`` (``deploy``, ``v1.4``,
#: ``team:web``).
TAG = re.compile(r"[^\W][\w.:/-]*")
#: The highest ``ANNOTATION_MAX_LENGTH`` and ``ANNOTATION_MAX_COUNT`` accepted.
MAX_LENGTH_LIMIT = 10_000
MAX_COUNT_LIMIT = 100_000
#: The longest ``ANNOTATION_RETENTION``: about 100 years, as every retention.
MAX_RETENTION = 100 * 366 * 86400
#: Shortest ``ANNOTATION_TOKEN`` accepted (as ``EXPORT_TOKEN``).
MIN_TOKEN = 16
#: Control characters a text may hold: line breaks and tabs (a commit message has them).
ALLOWED_CONTROLS = "\n\r\t"


def clean_text(text: object, max_length: int) -> str:
    """``text`` stripped, if it can be an annotation's text, else ``TypeError``/``ValueError``."""
    if not isinstance(text, str):
        raise TypeError(f"An annotation's text must be a str, not {type(text).__name__}.")
    value = text.strip()
    if not value:
        raise ValueError("An annotation's text must not be empty or blank.")
    if len(value) > max_length:
        raise ValueError(
            f"An annotation's text is {len(value)} characters long; at most {max_length} are "
            "kept (ANNOTATION_MAX_LENGTH)."
        )
    for char in value:
        category = unicodedata.category(char)
        if (category == "Cc" and char not in ALLOWED_CONTROLS) or category == "Cs":
            raise ValueError(
                f"An annotation's text must not contain the control character {char!r}."
            )
    return value


def clean_tags(tags: object) -> list[str]:
    """``tags`` (an iterable of str, or one str for one tag) as a list without repeats, in
    order, else ``TypeError``/``ValueError``."""
    if tags is None:
        return []
    items: Iterable[Any] = [tags] if isinstance(tags, str) else _iterable(tags)
    found: list[str] = []
    for tag in items:
        if not isinstance(tag, str):
            raise TypeError(f"An annotation's tags must be str, not {type(tag).__name__}.")
        if len(tag) > MAX_TAG_LENGTH or not TAG.fullmatch(tag):
            raise ValueError(
                f"The tag {shown(tag)} is not a tag: 1 to {MAX_TAG_LENGTH} letters, digits or "
                "'_', then also '.', ':', '/' or '-'."
            )
        if tag not in found:
            found.append(tag)
    if len(found) > MAX_TAGS:
        raise ValueError(f"An annotation carries at most {MAX_TAGS} tags, not {len(found)}.")
    return found


def _iterable(tags: object) -> Iterable[Any]:
    if isinstance(tags, bytes | bytearray | dict) or not isinstance(tags, Iterable):
        raise TypeError(
            f"tags must be a list or tuple of str (or one str), not {type(tags).__name__}."
        )
    return tags


def validate_max_length(value: object) -> int:
    return integer(value, "ANNOTATION_MAX_LENGTH", minimum=1, maximum=MAX_LENGTH_LIMIT)


def validate_max_count(value: object) -> int:
    return integer(value, "ANNOTATION_MAX_COUNT", minimum=1, maximum=MAX_COUNT_LIMIT)


def validate_retention(value: object) -> int:
    return integer(value, "ANNOTATION_RETENTION", minimum=60, maximum=MAX_RETENTION, unit="seconds")


def validate_token(value: object) -> str | None:
    if value is not None and (not isinstance(value, str) or len(value.strip()) < MIN_TOKEN):
        raise ValueError(
            f"must be None or a str of at least {MIN_TOKEN} characters (a secret, e.g. from "
            "secrets.token_urlsafe()), other than EXPORT_TOKEN."
        )
    return value
