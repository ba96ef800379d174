"""Writes deferred from view code (``counter.incr(defer=True)``): handed to the process's sender.

The models cannot import the request write path (it builds on them), so the sender registers
itself here when :mod:`django_redis_metrics.sending.sender` is imported, which importing the
package does. A deferred write is validated at once (bad input raises in the caller) and then
queued: it never waits on Redis and never raises because Redis is away.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .batch import Batch
from .validation import shown

if TYPE_CHECKING:
    from .base import Metric

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
    """``defer`` as a bool, refusing non-bools, a ``batch`` that is not a :class:`Batch`, and
    ``defer=True`` together with a batch: before anything runs or is written."""
    if defer is False and (batch is None or type(batch) is Batch):  # the usual calls, at once
        return False
    if not isinstance(defer, bool):
        raise TypeError(f"defer must be True or False, not {shown(defer)}.")
    if batch is not None:
        check_batch(batch)
        if defer:
            raise TypeError("Give either batch= or defer=True, not both.")
    return defer


def check_batch(batch: object) -> None:
    """Refuse a ``batch=`` that is neither ``None`` nor a :class:`Batch` (its write would fail
    with an AttributeError, or, in ``Statistic.time()``, only after the block ran)."""
    if batch is not None and not isinstance(batch, Batch):
        raise TypeError(f"batch must be a Batch, not {type(batch).__name__}: {shown(batch)}.")
