"""The Alerts page: each declared alert's condition, state, value as last evaluated and its
recent transitions (one round trip), and the banner of firing alerts on the dashboard (read
in the dashboard's first round trip)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.template.response import TemplateResponse

from ..alerts.registry import declared
from ..alerts.state import Status, statuses_steps
from ..conf import conf
from ..core.drive import drive
from ..core.steps import Steps
from . import common, labels

#: Transitions shown per alert.
HISTORY_SHOWN = 10
#: The order of the rows: firing first, then pending, resolved, normal; then by name.
ORDER = {"firing": 0, "pending": 1, "resolved": 2, "normal": 3}


def row_of(status: Status) -> dict[str, Any]:
    alert = status.alert
    return {
        "name": alert.name,
        "state": status.state,
        "source": alert.source_label,
        "threshold": alert.threshold,
        "over": common.label(alert.over),
        "for": common.label(alert.for_) if alert.for_ else "",
        "value": status.value,
        "since": labels.instant_label(status.since, 1) if status.since is not None else "",
        "evaluated": labels.instant_label(status.evaluated, 1) if status.evaluated else "",
        "history": [
            {**line, "when": labels.instant_label(float(line["at"]), 1)} for line in status.history
        ],
        "waiting": status.waiting,
        "delivered": status.delivered,
        "gave_up": status.gave_up + status.dropped,
    }


def alerts_page(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    now = common.current_time()
    found = drive(statuses_steps(declared(), HISTORY_SHOWN))
    rows = sorted((row_of(s) for s in found), key=lambda r: (ORDER.get(r["state"], 9), r["name"]))
    options = conf.ALERTS
    context.update(
        title="Alerts",
        rows=rows,
        firing=sum(row["state"] == "firing" for row in rows),
        webhook=options.webhook_url is not None,
        mail_admins=options.mail_admins,
        zone_label=labels.zone_label(now),
        as_of=labels.instant_label(now, 1),
    )
    return TemplateResponse(request, "django_redis_metrics/admin/alerts.html", context)


def firing_steps() -> Steps[list[dict[str, Any]]]:
    """The firing alerts for the dashboard's banner: one read, run in the dashboard's first
    round trip (none without alerts)."""
    alerts = declared()
    if not alerts:
        return []
    return [row_of(s) for s in (yield from statuses_steps(alerts, 1)) if s.state == "firing"]
