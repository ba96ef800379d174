"""Writes deferred from view code (``counter.incr(defer=True)``): handed to the process's sender.

The models cannot import the request write path (it builds on them), so the sender registers
itself here when :mod:`django_redis_metrics.sending.sender` is imported, which importing the
package does. A deferred write is validated at once (bad input raises in the caller) and then
queued: it never waits on Redis and never raises because Redis is away.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from .base import Metric
    from .batch import Batch

#: A write made later into the sender's batch: any model write called with ``batch=batch``.
Write = Callable[["Batch"], None]


class Sink(Protocol):
    """Where deferred writes go (the sender); each method answers False if the write was
    dropped because the sender's buffer is full."""

    def incr(self, counter: Metric, count: int, when: float) -> bool: ...

    def mark(self, bitmap: Metric, user_id: Any, when: float) -> bool: ...

    def write(self, label: str, write: Write) -> bool: ...


_sink: Sink | None = None


def register(sink: Sink) -> None:
    """Make ``sink`` receive every deferred write of this process."""
    global _sink
    _sink = sink


def sink() -> Sink:
    if _sink is None:
        raise RuntimeError("No sender is registered for deferred metrics writes.")
    return _sink


def check_defer(defer: object, batch: object) -> bool:
    """``defer`` as a bool, refusing non-bools and ``defer=True`` together with a batch."""
    if not isinstance(defer, bool):
        raise TypeError(f"defer must be True or False, not {defer!r}.")
    if defer and batch is not None:
        raise TypeError("Give either batch= or defer=True, not both.")
    return defer
