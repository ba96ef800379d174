"""The registry of kinds: every kind of metric the app knows, in the order their cleaners run.

Each kind registers once, in its own package's ``kind.py`` (a :class:`~.core.kind.Kind`: its
model, cleaner, Prometheus families and admin pages). ``cleanup``, the exposition collector and
the admin iterate :func:`registered`, so a new kind is its own package plus one line below.
"""

from __future__ import annotations

from .bitmaps import kind as bitmaps
from .core.kind import Kind
from .counter import kind as counter
from .estimates import kind as estimates
from .events import kind as events
from .gauge import kind as gauge
from .statistic import kind as statistic

_registry: dict[str, Kind] = {}


def register(kind: Kind) -> Kind:
    """Add ``kind`` after those registered; its name (its model's ``KIND``) must be new."""
    if kind.name in _registry:
        raise ValueError(f"A kind named {kind.name!r} is already registered.")
    _registry[kind.name] = kind
    return kind


def unregister(name: str) -> Kind:
    """Take the kind ``name`` out of the registry (a ``KeyError`` if it is not there)."""
    return _registry.pop(name)


def registered() -> tuple[Kind, ...]:
    """Every registered kind, in registration order (the order of the cleaners)."""
    return tuple(_registry.values())


#: The kinds of this package, in the order their cleaners run; a new kind adds its line here.
for _package in (counter, events, bitmaps, estimates, statistic, gauge):
    register(_package.ENTRY)
