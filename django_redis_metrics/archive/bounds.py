"""Validators of the archive's settings (named by ``archive/settings.py``)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from ..core.validation import shown

#: Most series one archive step holds.
MAX_BATCH = 10_000


def validate_database(value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"ARCHIVE_DATABASE must be a database alias (a str), not {shown(value)}.")
    if value not in settings.DATABASES:
        raise ValueError(
            f"ARCHIVE_DATABASE is {value!r}, which DATABASES does not define "
            f"(it defines {', '.join(map(repr, settings.DATABASES))})."
        )


def validate_precisions(value: Any) -> None:
    if isinstance(value, str | bytes) or not hasattr(value, "__iter__"):
        raise TypeError(f"ARCHIVE_PRECISIONS must be a tuple of seconds, not {shown(value)}.")
    for precision in value:
        if isinstance(precision, bool) or not isinstance(precision, int) or precision < 1:
            raise ValueError(
                f"ARCHIVE_PRECISIONS must hold positive whole seconds, not {shown(precision)}."
            )


def validate_batch(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"ARCHIVE_BATCH must be an int, not {shown(value)}.")
    if not 1 <= value <= MAX_BATCH:
        raise ValueError(f"ARCHIVE_BATCH must be from 1 to {MAX_BATCH:,}, not {value}.")
