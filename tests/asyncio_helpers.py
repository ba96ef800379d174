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
