"""The sender's thread outlives a bug of its own: the exception is logged, the thread goes on,
and the writes it was about to send are sent, once."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from django_redis_metrics import Counter
from django_redis_metrics.sending import sender


def test_the_thread_survives_an_exception_and_drops_nothing(
    single: Any, fresh_state: None, monkeypatch: pytest.MonkeyPatch, caplog: Any
) -> None:
    prepare = sender.sender._prepare
    failures = []

    def fails_once(generation: int) -> Any:
        if not failures:
            failures.append(generation)
            raise RuntimeError("a bug in the sender")
        return prepare(generation)

    monkeypatch.setattr(sender.sender, "_prepare", fails_once)
    signups = Counter("signups", precisions=[60])
    with caplog.at_level(logging.ERROR, logger="django_redis_metrics"):
        signups.incr(defer=True)
        assert sender.flush(timeout=10)
    assert failures, "the bug never ran"
    assert "The metrics sender failed." in caplog.messages
    assert signups.total(60) == 1
    signups.incr(2, defer=True)  # the same thread goes on
    assert sender.flush(timeout=10)
    assert signups.total(60) == 3
