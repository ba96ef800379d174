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


def nodes_of(client: Any, *keys: str) -> int:
    """How many nodes hold ``keys``: 1 on a single node; on Redis Cluster, the masters of their
    slots (a pipeline over them sends one packet per node)."""
    if not hasattr(client, "get_node_from_key"):
        return 1
    return len({client.get_node_from_key(key).name for key in keys})
