"""Counting round trips to Redis: the packets the real redis-py client sends (one per command or
pipeline). Instrumentation of the real client around a real server, never a mock."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from redis.connection import AbstractConnection


class RoundTrips:
    """Counts ``send_packed_command`` calls while ``monkeypatch`` holds the patch."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = AbstractConnection.send_packed_command

        def counting(conn: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return original(conn, *args, **kwargs)

        monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)

    def reset(self) -> None:
        self.calls = 0

    def measure(self, action: Callable[[], object]) -> int:
        """How many round trips ``action`` makes."""
        before = self.calls
        action()
        return self.calls - before

    __call__ = measure


class Rounds:
    """Counts round trips as waits: a command (or pipeline) sent after a reply was read starts
    a new round, so a Redis Cluster pipeline written to several nodes before any reply is read
    is one round (one network latency), where :class:`RoundTrips` counts one per node."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self._reading = True
        send = AbstractConnection.send_packed_command
        read = AbstractConnection.read_response

        def sending(conn: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
            if self._reading:
                self.calls += 1
                self._reading = False
            return send(conn, *args, **kwargs)

        def reading(conn: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
            try:
                return read(conn, *args, **kwargs)
            finally:
                self._reading = True

        monkeypatch.setattr(AbstractConnection, "send_packed_command", sending)
        monkeypatch.setattr(AbstractConnection, "read_response", reading)

    def measure(self, action: Callable[[], object]) -> int:
        """How many rounds ``action`` waits for."""
        before, self._reading = self.calls, True
        action()
        return self.calls - before

    __call__ = measure


def nodes_of(client: Any, *keys: str) -> int:
    """How many nodes hold ``keys``: 1 on a single node; on Redis Cluster, the masters of their
    slots (a pipeline over them sends one packet per node)."""
    if not hasattr(client, "get_node_from_key"):
        return 1
    return len({client.get_node_from_key(key).name for key in keys})
