"""The estimates' archive pass: each closed day's, week's and month's HyperLogLog registers
(the key's string, as ``GET`` gives it: at most about 12 KB, often far less) with its
``PFCOUNT``, so unions of any archived range are counted later with the same error
(``archive/periodic.py`` does the pass)."""

from __future__ import annotations

from ..archive.base import ArchiveContext, ArchiveReport
from ..archive.horizon import ARCHIVED_PERIODS
from ..archive.periodic import PeriodicSpec, archive_periodic
from ..core.connection import RedisClient
from .keys import KIND


def _as_is(value: bytes) -> bytes:
    return value


SPEC = PeriodicSpec(KIND, whole=frozenset(ARCHIVED_PERIODS), pack=_as_is)


def archive_estimates(client: RedisClient, context: ArchiveContext) -> ArchiveReport:
    """One archive pass over every estimate series (an ``archive.base.Archiver``)."""
    return archive_periodic(client, context, SPEC)
