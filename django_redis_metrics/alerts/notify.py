"""What a change of state sets off in the process that made it: the Django signals and, when
``ALERTS["MAIL_ADMINS"]`` asks for it, a mail to ``ADMINS`` (the webhook goes through the
outbox, ``delivery.py``)."""

from __future__ import annotations

import logging

from django.core.mail import mail_admins

from ..signals import alert_fired, alert_resolved
from .model import Alert
from .options import AlertOptions
from .state import Transition

logger = logging.getLogger("django_redis_metrics.alerts")


def subject(transition: Transition) -> str:
    word = "FIRING" if transition.state == "firing" else "resolved"
    return f"Alert {word}: {transition.alert.name}"


def message(transition: Transition) -> str:
    alert = transition.alert
    return (
        f"Alert {alert.name!r} is {transition.state} (was {transition.previous}).\n"
        f"Condition: {alert.describe()}\n"
        f"Value: {transition.value}\n"
        f"At: {transition.at} (epoch seconds)\n"
    )


def notify(transition: Transition, options: AlertOptions) -> None:
    """Signals and mail for one transition that notifies (to firing, or firing to resolved);
    a failing receiver or mail server is logged, never raised into the evaluation."""
    if transition.state == "firing":
        signal = alert_fired
    elif transition.state == "resolved" and transition.previous == "firing":
        signal = alert_resolved
    else:
        return
    logger.warning("%s (value %s)", subject(transition), transition.value)
    for receiver, result in signal.send_robust(
        sender=Alert,
        alert=transition.alert,
        value=transition.value,
        at=transition.at,
        previous=transition.previous,
    ):
        if isinstance(result, Exception):
            logger.error("Alert signal receiver %r failed: %r", receiver, result)
    if options.mail_admins:
        mail_admins(subject(transition), message(transition), fail_silently=True)
