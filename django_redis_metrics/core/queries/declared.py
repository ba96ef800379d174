"""The metrics a site declares in its apps' ``metrics.py``, known to ``Model.objects`` before
they hold data.

At start-up the app imports every installed app's ``metrics.py`` (``apps.py``, as the admin
does with ``admin.py``), then :func:`collect` records each metric bound to a name at the module
level of those modules (``signups = Counter("signups")``). A queryset lists a declared metric
that holds no data yet as a row of its own, with its declared configuration; once it holds
data, its stored rows are listed instead. :func:`declare` records one metric by hand (a metric
built elsewhere, or in tests). The registry is per process and holds at most
``MAX_DECLARED`` metrics.
"""

from __future__ import annotations

from threading import Lock
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..base import Metric

#: Most declarations one process keeps (a site declares tens or hundreds).
MAX_DECLARED = 10_000

_declared: dict[str, dict[str, Metric]] = {}
_lock = Lock()


def declare(metric: Metric) -> Metric:
    """Record ``metric`` (a metric, not a series) as declared; a later declaration of the
    same kind and name replaces it. Returns ``metric``."""
    if getattr(metric, "family", None) is not None:
        raise TypeError(f"{metric!r} is a series: declare its metric instead.")
    with _lock:
        kind = _declared.setdefault(metric.KIND, {})
        if metric.name not in kind and sum(map(len, _declared.values())) >= MAX_DECLARED:
            raise ValueError(f"At most {MAX_DECLARED} metrics may be declared.")
        kind[metric.name] = metric
    return metric


def collect(module: ModuleType, base: type[Metric]) -> list[Metric]:
    """Declare every metric (an instance of ``base``, the metric class; passed in, as the
    metric classes import this module) bound to a name at the module level of ``module``."""
    found = [
        value for value in vars(module).values() if isinstance(value, base) and value.family is None
    ]
    for metric in found:
        declare(metric)
    return found


def declared(kind: str) -> dict[str, Metric]:
    """The declared metrics of ``kind``, by name (a copy)."""
    with _lock:
        return dict(_declared.get(kind, {}))


def forget(kind: str | None = None) -> None:
    """Forget the declarations of ``kind`` (of every kind if ``None``)."""
    with _lock:
        if kind is None:
            _declared.clear()
        else:
            _declared.pop(kind, None)
