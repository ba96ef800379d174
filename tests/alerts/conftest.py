"""Alerts' fixtures: no alert declared before or after a test, and the received signals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from django_redis_metrics.alerts import forget
from django_redis_metrics.signals import alert_fired, alert_resolved


@pytest.fixture(autouse=True)
def no_alerts() -> Iterator[None]:
    forget()
    yield
    forget()


@pytest.fixture
def received() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """``("fired" | "resolved", kwargs)`` of every alert signal sent during the test."""
    found: list[tuple[str, dict[str, Any]]] = []

    def fired(sender: Any, **kwargs: Any) -> None:
        found.append(("fired", kwargs))

    def resolved(sender: Any, **kwargs: Any) -> None:
        found.append(("resolved", kwargs))

    alert_fired.connect(fired, weak=False)
    alert_resolved.connect(resolved, weak=False)
    yield found
    alert_fired.disconnect(fired)
    alert_resolved.disconnect(resolved)
