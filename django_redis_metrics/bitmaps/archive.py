"""The bitmaps' archive pass: each closed day's, week's and month's count (BITCOUNT), and the
bits of weeks and months (zlib-compressed) so unions and cohorts over them still work once
Redis has forgotten them (``archive/periodic.py`` does the pass)."""

from __future__ import annotations

from ..archive.base import ArchiveContext, ArchiveReport
from ..archive.bits import pack_bits
from ..archive.periodic import PeriodicSpec, archive_periodic
from ..core.connection import RedisClient
from .keys import KIND

SPEC = PeriodicSpec(KIND, whole=frozenset({"week", "month"}), pack=pack_bits)


def archive_bitmaps(client: RedisClient, context: ArchiveContext) -> ArchiveReport:
    """One archive pass over every bitmap series (an ``archive.base.Archiver``)."""
    return archive_periodic(client, context, SPEC)
