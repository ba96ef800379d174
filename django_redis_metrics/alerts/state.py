"""An alert's state in Redis: one hash (state, since, last evaluation and value), a capped
list of its transitions (newest first) and a capped outbox of webhook deliveries, all in the
alert's slot and expiring ``TTL`` after the last evaluation (an alert no longer declared
leaves nothing behind).

An evaluation is one script call (``lua/alert_transition.lua``): the transition, its history
line and its delivery are written together or not at all, and only the evaluator whose call
made the transition is told of it, so several evaluators notify once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..core.keys import to_str
from ..core.scripts import ScriptLibrary
from ..core.steps import Op, Pipe, Script, Steps
from .model import Alert

script = ScriptLibrary(__name__.rpartition(".")[0])

STATES = ("normal", "pending", "firing", "resolved")
#: Seconds an alert's keys outlive its last evaluation.
TTL = 30 * 86400
#: Most deliveries waiting per alert: past it, the oldest are dropped (and counted).
MAX_OUTBOX = 100


@dataclass(frozen=True)
class Transition:
    """One change of an alert's state, made by this evaluation."""

    alert: Alert
    previous: str
    state: str
    at: float
    value: float | None


def value_text(value: float | None) -> str:
    return "" if value is None else repr(value)


def parsed_value(text: str) -> float | None:
    return None if text in ("", "None") else float(text)


def transition_call(
    alert: Alert, now: float, value: float | None, history: int, deliver: bool
) -> Script:
    """The script call applying one evaluation of ``alert`` at ``now``."""
    return Script(
        script("alert_transition"),
        [alert.key("state"), alert.key("history"), alert.key("outbox")],
        [
            repr(float(now)),
            int(alert.breached(value)),
            alert.for_,
            value_text(value),
            history,
            MAX_OUTBOX,
            int(deliver),
            TTL * 1000,
            alert.name,
            alert.threshold,
        ],
    )


def transition_of(alert: Alert, reply: Any, now: float, value: float | None) -> Transition | None:
    """The transition a script reply reports, if the call made one."""
    previous, state = (to_str(item) for item in reply)
    if previous == "stale" or previous == state:
        return None
    return Transition(alert, previous, state, now, value)


@dataclass(frozen=True)
class Status:
    """What the admin shows of one alert."""

    alert: Alert
    state: str
    since: float | None
    evaluated: float | None
    value: float | None
    history: list[dict[str, Any]]
    waiting: int
    delivered: int
    gave_up: int
    dropped: int


def statuses_steps(alerts: list[Alert], history: int = 10) -> Steps[list[Status]]:
    """Every alert's state and its newest ``history`` transitions: one round trip."""
    if not alerts:
        return []
    ops = []
    for alert in alerts:
        ops += [
            Op("hgetall", alert.key("state")),
            Op("lrange", alert.key("history"), 0, history - 1),
            Op("zcard", alert.key("outbox")),
        ]
    replies = yield Pipe(ops)
    found = []
    for index, alert in enumerate(alerts):
        raw, lines, waiting = replies[3 * index : 3 * index + 3]
        fields = {to_str(k): to_str(v) for k, v in raw.items()}
        found.append(
            Status(
                alert,
                fields.get("state", "normal"),
                float(fields["since"]) if "since" in fields else None,
                float(fields["at"]) if "at" in fields else None,
                parsed_value(fields.get("value", "")),
                [_line(line) for line in lines],
                int(waiting),
                int(fields.get("delivered", 0)),
                int(fields.get("gave_up", 0)),
                int(fields.get("dropped", 0)),
            )
        )
    return found


def _line(text: Any) -> dict[str, Any]:
    entry: dict[str, Any] = json.loads(to_str(text))
    entry["value"] = parsed_value(str(entry.get("value", "")))
    return entry
