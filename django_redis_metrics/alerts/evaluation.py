"""One evaluation pass over the declared alerts (``check_alerts``, each ``clean_metrics``
pass): every value read together (one shared pipeline per round), every transition applied
in one pipeline of script calls, then the signals and mail of the transitions this pass made,
then the due webhook deliveries (``delivery.py``), within ``ALERTS["PASS_SECONDS"]``.

``now`` (epoch seconds) is the time the pass evaluates at: the windows end at it and the
pending periods are measured with it, so a test passes the times it wants instead of sleeping.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from ..conf import conf
from ..core.drive import drive
from ..core.gather import gather_steps
from ..core.steps import Steps
from ..core.timeutil import When, to_timestamp
from .delivery import Outcome, deliver
from .model import Alert
from .notify import notify
from .options import AlertOptions
from .registry import declared
from .state import Transition, transition_call, transition_of

logger = logging.getLogger("django_redis_metrics.alerts")


@dataclass
class PassReport:
    """What one pass did."""

    evaluated: int = 0
    transitions: list[Transition] = field(default_factory=list)
    #: Alerts whose value could not be read, and why.
    errors: dict[str, str] = field(default_factory=dict)
    deliveries: list[Outcome] = field(default_factory=list)

    def summary(self) -> str:
        changes = ", ".join(f"{t.alert.name}: {t.previous} -> {t.state}" for t in self.transitions)
        sent = sum(o.delivered for o in self.deliveries)
        failed = len(self.deliveries) - sent
        return (
            f"alerts: {self.evaluated} evaluated, {len(self.transitions)} changed"
            + (f" ({changes})" if changes else "")
            + (f", {len(self.errors)} unreadable" if self.errors else "")
            + (f", webhooks {sent} sent, {failed} failed" if self.deliveries else "")
        )


def evaluate(
    now: When = None, *, alerts: list[Alert] | None = None, webhooks: bool = True
) -> PassReport:
    """One pass over ``alerts`` (default: the declared ones) at ``now`` (default: the clock)."""
    moment = time.time() if now is None else to_timestamp(now, "now")
    chosen = declared() if alerts is None else list(alerts)
    options: AlertOptions = conf.ALERTS
    report = PassReport(evaluated=len(chosen))
    if not chosen:
        return report
    report.transitions = drive(_pass_steps(chosen, moment, options, report))
    for transition in report.transitions:
        notify(transition, options)
    if webhooks:
        report.deliveries = deliver(chosen, moment, options)
    return report


def _pass_steps(
    alerts: list[Alert], now: float, options: AlertOptions, report: PassReport
) -> Steps[list[Transition]]:
    values = yield from gather_steps([alert.value_steps(now) for alert in alerts])
    readable: list[tuple[Alert, Any]] = []
    for alert, value in zip(alerts, values, strict=True):
        if isinstance(value, Exception):
            report.errors[alert.name] = f"{type(value).__name__}: {value}"
            logger.error("Alert %r: cannot read its value: %s", alert.name, value)
        else:
            readable.append((alert, value))
    deliver_too = options.webhook_url is not None
    calls = [
        _call(transition_call(alert, now, value, options.history, deliver_too))
        for alert, value in readable
    ]
    replies = yield from gather_steps(calls)
    found = []
    for (alert, value), reply in zip(readable, replies, strict=True):
        if isinstance(reply, Exception):
            raise reply
        transition = transition_of(alert, reply, now, value)
        if transition is not None:
            found.append(transition)
    return found


def _call(call: Any) -> Steps[Any]:
    return (yield call)
