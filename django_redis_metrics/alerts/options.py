"""The ``ALERTS`` setting: one dict of how alerts notify (``conf.ALERTS``).

Keys left out keep their default (:data:`DEFAULT_ALERTS`); the system check ``E080`` refuses
a bad value with a message naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.validation import integer, seconds, shown

#: Every key of ``ALERTS`` and its default.
DEFAULT_ALERTS: dict[str, Any] = {
    "WEBHOOK_URL": None,
    "WEBHOOK_TIMEOUT": 5.0,
    "WEBHOOK_ATTEMPTS": 5,
    "WEBHOOK_BACKOFF": 30.0,
    "MAIL_ADMINS": False,
    "HISTORY": 50,
    "PASS_SECONDS": 30.0,
}
#: Most transitions kept per alert, and most webhook attempts per notification.
MAX_HISTORY = 1000
MAX_ATTEMPTS = 20


@dataclass(frozen=True, slots=True)
class AlertOptions:
    """``ALERTS``, typed and checked."""

    #: Where each change of state is POSTed as JSON (``None``: no webhook).
    webhook_url: str | None
    #: Seconds one POST may take (connect, and each read), after which it counts as failed.
    webhook_timeout: float
    #: Attempts per notification (the first included) before it is given up.
    webhook_attempts: int
    #: Seconds before the first retry; doubled at each further one.
    webhook_backoff: float
    #: Whether each change of state is mailed to ``ADMINS`` (``mail_admins``).
    mail_admins: bool
    #: Transitions kept per alert (newest first).
    history: int
    #: Seconds one evaluation pass may spend delivering webhooks.
    pass_seconds: float

    @classmethod
    def of(cls, value: object) -> AlertOptions:
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise TypeError(f"ALERTS must be a dict, not {shown(value)}.")
        unknown = sorted(set(value) - set(DEFAULT_ALERTS), key=str)
        if unknown:
            raise ValueError(
                f"ALERTS has no key {', '.join(map(repr, unknown))}; "
                f"it takes {', '.join(DEFAULT_ALERTS)}."
            )
        given = {**DEFAULT_ALERTS, **value}
        url = given["WEBHOOK_URL"]
        if url is not None and (
            not isinstance(url, str) or not url.startswith(("http://", "https://"))
        ):
            raise ValueError(
                f"ALERTS['WEBHOOK_URL'] must be an http:// or https:// URL, not {shown(url)}."
            )
        mail = given["MAIL_ADMINS"]
        if not isinstance(mail, bool):
            raise TypeError(f"ALERTS['MAIL_ADMINS'] must be True or False, not {shown(mail)}.")
        return cls(
            url,
            seconds(given["WEBHOOK_TIMEOUT"], "ALERTS['WEBHOOK_TIMEOUT']"),
            integer(
                given["WEBHOOK_ATTEMPTS"],
                "ALERTS['WEBHOOK_ATTEMPTS']",
                minimum=1,
                maximum=MAX_ATTEMPTS,
            ),
            seconds(given["WEBHOOK_BACKOFF"], "ALERTS['WEBHOOK_BACKOFF']"),
            mail,
            integer(given["HISTORY"], "ALERTS['HISTORY']", minimum=1, maximum=MAX_HISTORY),
            seconds(given["PASS_SECONDS"], "ALERTS['PASS_SECONDS']"),
        )


def validate_alerts(value: object) -> AlertOptions:
    """The system check's validator (``E080``)."""
    return AlertOptions.of(value)
