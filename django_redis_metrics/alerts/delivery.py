"""Webhook deliveries: a bounded retry queue in Redis, drained by the evaluation passes.

A transition that notifies puts its delivery in the alert's outbox (a sorted set scored by
when it is due) in the same script call that makes it (``state.py``), so a crash loses none.
Each pass then claims the due deliveries (``lua/delivery_claim.lua`` pushes them a lease ahead,
so another evaluator leaves them alone while this one sends), POSTs each as JSON with the
``WEBHOOK_TIMEOUT``, and ends each (``lua/delivery_done.lua``): delivered (a 2xx answer), or due
again after ``WEBHOOK_BACKOFF`` doubled per attempt, or given up after ``WEBHOOK_ATTEMPTS``.

Why in Redis rather than a retry loop in the process: a failing or hanging webhook never holds
the evaluation up (a pass spends at most ``PASS_SECONDS`` on deliveries, one ``WEBHOOK_TIMEOUT``
each, and leaves the rest for the next pass), a retry survives the process that made the
transition, and any evaluator may send it. Delivery is at least once: a webhook that answers
after its lease, or a crash between the POST and its end, may see it again (``id`` tells).
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from ..core.drive import drive
from ..core.gather import gather_steps
from ..core.keys import to_str
from ..core.steps import Op, Script, Steps
from .model import Alert
from .options import AlertOptions
from .state import parsed_value, script

#: Most deliveries one alert hands to one pass.
CLAIM = 10
#: Seconds a claimed delivery stays away from other evaluators beyond its timeout.
LEASE_MARGIN = 5.0


@dataclass(frozen=True)
class Outcome:
    """What became of one delivery attempt."""

    alert: str
    id: int
    attempt: int
    delivered: bool
    error: str = ""


def claimed_steps(alerts: list[Alert], now: float, lease: float) -> Steps[list[tuple[Alert, Any]]]:
    """The due deliveries of every alert, claimed: one round trip."""
    calls = [
        _claim(Script(script("delivery_claim"), [a.key("outbox")], [repr(now), lease, CLAIM]))
        for a in alerts
    ]
    replies = yield from gather_steps(calls)
    found = []
    for alert, reply in zip(alerts, replies, strict=True):
        if isinstance(reply, Exception):
            raise reply
        found += [(alert, member) for member in reply]
    return found


def _claim(call: Script) -> Steps[Any]:
    return (yield call)


def post(url: str, body: dict[str, Any], timeout: float) -> None:
    """POST ``body`` as JSON; an exception unless the answer is 2xx within ``timeout``."""
    data = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method="POST", headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        if not 200 <= response.status < 300:
            raise urllib.error.HTTPError(url, response.status, "not 2xx", response.headers, None)


def deliver(alerts: list[Alert], now: float, options: AlertOptions) -> list[Outcome]:
    """Send the deliveries due by ``now``, within ``options.pass_seconds``."""
    if options.webhook_url is None or not alerts:
        return []
    lease = options.webhook_timeout + LEASE_MARGIN
    claimed = drive(claimed_steps(alerts, now, lease))
    deadline = time.monotonic() + options.pass_seconds
    outcomes = []
    for alert, member in claimed:
        remaining = deadline - time.monotonic()
        delivery = json.loads(to_str(member))
        if remaining <= 0:  # out of time: due again at once, for the next pass
            drive(_done_steps(alert, member, delivery, now, options, retry_now=True))
            continue
        body = {
            **delivery,
            "attempt": delivery["attempt"] + 1,
            "value": parsed_value(str(delivery["value"])),
            "description": alert.describe(),
        }
        try:
            post(options.webhook_url, body, min(options.webhook_timeout, remaining))
        except (OSError, ValueError) as exc:  # URLError, HTTPError, timeouts are OSErrors
            drive(_done_steps(alert, member, delivery, now, options))
            outcomes.append(Outcome(alert.name, delivery["id"], body["attempt"], False, str(exc)))
        else:
            drive(_finish(alert, member, "", 0, ""))
            outcomes.append(Outcome(alert.name, delivery["id"], body["attempt"], True))
    return outcomes


def _done_steps(
    alert: Alert,
    member: Any,
    delivery: dict[str, Any],
    now: float,
    options: AlertOptions,
    *,
    retry_now: bool = False,
) -> Steps[Any]:
    """A failed attempt's end: due again after the backoff, or given up."""
    if retry_now:
        return (yield from _finish(alert, member, to_str(member), now, ""))
    attempt = delivery["attempt"] + 1
    if attempt >= options.webhook_attempts:
        return (yield from _finish(alert, member, "", 0, "gave_up"))
    retry = json.dumps({**delivery, "attempt": attempt})
    due = now + options.webhook_backoff * 2 ** (attempt - 1)
    return (yield from _finish(alert, member, retry, due, ""))


def _finish(alert: Alert, member: Any, retry: str, due: float, gave_up: str) -> Steps[Any]:
    keys = [alert.key("outbox"), alert.key("state")]
    return (yield Script(script("delivery_done"), keys, [member, retry, repr(due), gave_up]))


def waiting_steps(alert: Alert) -> Steps[list[dict[str, Any]]]:
    """The deliveries waiting in ``alert``'s outbox, each with ``due`` (tests, admin)."""
    found = yield Op("zrange", alert.key("outbox"), 0, -1, withscores=True)
    return [{**json.loads(to_str(member)), "due": float(score)} for member, score in found]
