"""Running the async API from the suite's sync tests, one event loop per call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

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
