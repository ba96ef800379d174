"""The alerts a site declares: every ``Alert`` bound to a name at the module level of an app's
``metrics.py`` (collected at start-up, ``apps.py``), or given to :func:`register`. Per
process, at most ``MAX_ALERTS``; a later alert of the same name replaces the earlier one (a
module imported again)."""

from __future__ import annotations

from threading import Lock
from types import ModuleType

from .model import Alert

#: Most alerts one process keeps.
MAX_ALERTS = 1000

_alerts: dict[str, Alert] = {}
_lock = Lock()


def register(alert: Alert) -> Alert:
    """Declare ``alert``; returns it."""
    if not isinstance(alert, Alert):
        raise TypeError(f"register() takes an Alert, not {type(alert).__name__}.")
    with _lock:
        if alert.name not in _alerts and len(_alerts) >= MAX_ALERTS:
            raise ValueError(f"At most {MAX_ALERTS} alerts may be declared.")
        _alerts[alert.name] = alert
    return alert


def collect(module: ModuleType) -> list[Alert]:
    """Declare every ``Alert`` bound to a name at the module level of ``module``."""
    found = [value for value in vars(module).values() if isinstance(value, Alert)]
    for alert in found:
        register(alert)
    return found


def declared() -> list[Alert]:
    """The declared alerts, by name."""
    with _lock:
        return [_alerts[name] for name in sorted(_alerts)]


def forget() -> None:
    """Forget every declared alert (tests)."""
    with _lock:
        _alerts.clear()
