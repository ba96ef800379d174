"""Who may see metrics: one rule for the admin's Metrics section, its template tag and the
Prometheus exposition."""

from __future__ import annotations

from typing import Any

from .models import PERMISSION


def may_view_metrics(user: Any) -> bool:
    """Active staff holding the ``view_metrics`` permission (superusers have it)."""
    return bool(user is not None and user.is_active and user.is_staff and user.has_perm(PERMISSION))
