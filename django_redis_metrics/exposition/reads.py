"""Reads of many metrics sent in pipelines of bounded size: one round trip per chunk."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.connection import RedisClient

#: A read: the name of a redis-py pipeline method and its arguments.
Read = tuple[str, tuple[Any, ...]]

#: Most reads sent in one pipeline.
CHUNK = 1000


def run_reads(client: RedisClient, reads: Sequence[Read], chunk: int = CHUNK) -> list[Any]:
    """The replies of ``reads``, in order (errors are returned in place, not raised)."""
    replies: list[Any] = []
    for start in range(0, len(reads), chunk):
        pipe = client.pipeline(transaction=False)
        for method, args in reads[start : start + chunk]:
            getattr(pipe, method)(*args)
        replies += pipe.execute(raise_on_error=False)
    return replies
