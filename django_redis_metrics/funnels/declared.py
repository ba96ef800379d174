"""The funnels a site declares in its apps' ``metrics.py``: one admin page each.

At start-up the app imports every installed app's ``metrics.py`` (``apps.py``); :func:`collect`
then records each funnel bound to a name at the module level (``checkout = Funnel(...)``),
named by that binding unless given a ``name=``. :func:`declare` records one by hand. Per
process, at most ``MAX_DECLARED``.
"""

from __future__ import annotations

from threading import Lock
from types import ModuleType

from .model import Funnel
from .naming import checked_name
from .ordered import OrderedFunnel

AnyFunnel = Funnel | OrderedFunnel

#: Most funnels one process keeps declared.
MAX_DECLARED = 1000

_declared: dict[str, AnyFunnel] = {}
_lock = Lock()


def declare(funnel: AnyFunnel, name: str | None = None) -> AnyFunnel:
    """Record ``funnel`` under ``name`` (its own name if given, else ``name``); a later
    declaration of the same name replaces it. Returns ``funnel``."""
    if not isinstance(funnel, (Funnel, OrderedFunnel)):
        raise TypeError(f"Only a Funnel can be declared, not {funnel!r}.")
    if funnel.name is None:
        if name is None:
            raise ValueError("A declared funnel needs a name: Funnel(..., name=...).")
        funnel.name = checked_name(name)
    key = str(funnel.name)
    with _lock:
        if key not in _declared and len(_declared) >= MAX_DECLARED:
            raise ValueError(f"At most {MAX_DECLARED} funnels may be declared.")
        _declared[key] = funnel
    return funnel


def collect(module: ModuleType) -> list[AnyFunnel]:
    """Declare every funnel bound to a name at the module level of ``module``."""
    found = [
        declare(value, name)
        for name, value in vars(module).items()
        if isinstance(value, (Funnel, OrderedFunnel)) and not name.startswith("_")
    ]
    return found


def declared() -> dict[str, AnyFunnel]:
    """The declared funnels, by name, in name order (a copy)."""
    with _lock:
        return dict(sorted(_declared.items()))


def forget() -> None:
    """Forget every declaration (tests)."""
    with _lock:
        _declared.clear()
