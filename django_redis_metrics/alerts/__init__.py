"""Alerts: conditions on metrics, evaluated by ``check_alerts`` and ``clean_metrics``, with
their state in Redis (see ``docs/alerts.md``)."""

from __future__ import annotations

from .evaluation import PassReport, evaluate
from .model import Alert
from .registry import collect, declared, forget, register

__all__ = ["Alert", "PassReport", "collect", "declared", "evaluate", "forget", "register"]
