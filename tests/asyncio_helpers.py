"""Running the async API from the suite's sync tests, one event loop per call."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest
from redis.asyncio.connection import AbstractConnection

from django_redis_metrics.core.aio import aclose_connections

T = TypeVar("T")


def run(main: Callable[[], Awaitable[T]]) -> T:
    """``await main()`` in a fresh loop, whose clients are closed before the loop ends."""

    async def wrapper() -> T:
        try:
            return await main()
        finally:
            await aclose_connections()

    return asyncio.run(wrapper())


def raised(action: Callable[[], Any]) -> tuple[type[BaseException], str]:
    """The type and message of what ``action()`` raises (sync) or awaits to raise (async)."""
    with pytest.raises(Exception) as info:
        result = action()
        if asyncio.iscoroutine(result):
            run(lambda: result)
    return info.type, str(info.value)


def clockless(error: tuple[type[BaseException], str]) -> tuple[type[BaseException], str]:
    """A ``raised`` error with the seconds ahead of the Redis clock masked: a refusal of a time
    ahead says by how much, which two calls a moment apart may round differently."""
    return error[0], re.sub(r"is \d+ s ahead", "is N s ahead", error[1])


class AsyncRoundTrips:
    """Counts the round trips of the async client (``send_packed_command`` calls: one per
    command or pipeline) while ``monkeypatch`` holds the patch; the real client, no mock."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        original = AbstractConnection.send_packed_command

        async def counting(conn: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
            self.calls += 1
            return await original(conn, *args, **kwargs)

        monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)

    async def measure(self, action: Callable[[], Awaitable[Any]]) -> int:
        """How many round trips ``await action()`` makes."""
        before = self.calls
        await action()
        return self.calls - before


class AsyncRounds:
    """Counts the round trips of the async client as waits: a command sent after a reply was
    read starts a new round, so a Redis Cluster pipeline sent to several nodes at once is one
    round (one network latency), where :class:`AsyncRoundTrips` counts one per node."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        self._reading = True
        send = AbstractConnection.send_packed_command
        read = AbstractConnection.read_response

        async def sending(conn: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
            if self._reading:
                self.calls += 1
                self._reading = False
            return await send(conn, *args, **kwargs)

        async def reading(conn: AbstractConnection, *args: Any, **kwargs: Any) -> Any:
            try:
                return await read(conn, *args, **kwargs)
            finally:
                self._reading = True

        monkeypatch.setattr(AbstractConnection, "send_packed_command", sending)
        monkeypatch.setattr(AbstractConnection, "read_response", reading)

    async def measure(self, action: Callable[[], Awaitable[Any]]) -> int:
        """How many rounds ``await action()`` waits for."""
        before, self._reading = self.calls, True
        await action()
        return self.calls - before
