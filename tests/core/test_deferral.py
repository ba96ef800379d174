"""``defer=True`` writes go to the sink the sending package registers on import; without one,
a clear error instead of a write lost in silence."""

from __future__ import annotations

import pytest

from django_redis_metrics.core import deferral
from django_redis_metrics.sending import sender


def test_the_sender_is_the_registered_sink() -> None:
    assert isinstance(deferral.sink(), sender.DeferredWrites)


def test_no_registered_sink_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deferral, "_sink", None)
    with pytest.raises(RuntimeError, match="No sender is registered"):
        deferral.sink()
