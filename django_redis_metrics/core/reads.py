"""Plain commands on many keys, sent in pipelines of bounded size: one round trip per chunk
(the exporter's reads, the statistic and gauge cleaner's reads and deletions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .connection import RedisClient

#: A read: the name of a redis-py pipeline method and its arguments.
Read = tuple[str, tuple[Any, ...]]

#: Most reads sent in one pipeline.
CHUNK = 1000


def run_reads(
    client: RedisClient, reads: Sequence[Read], chunk: int = CHUNK, *, raise_on_error: bool
) -> list[Any]:
    """The replies of ``reads``, in order; an error reply is raised, or with ``raise_on_error``
    false returned in its place."""
    replies: list[Any] = []
    for start in range(0, len(reads), chunk):
        pipe = client.pipeline(transaction=False)
        for method, args in reads[start : start + chunk]:
            getattr(pipe, method)(*args)
        replies += pipe.execute(raise_on_error=raise_on_error)
    return replies
