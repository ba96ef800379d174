"""One archive pass over every registered kind: what ``archive_metrics`` and each
``clean_metrics`` pass run."""

from __future__ import annotations

from collections.abc import Iterable

from django.utils.module_loading import import_string

from ..conf import conf
from ..core.connection import RedisClient, get_redis_connection
from ..core.timeutil import When, to_timestamp
from ..kinds import registered
from .base import ArchiveContext, Archiver, ArchiveReport
from .missing import archive_tables


def archivers() -> dict[str, Archiver]:
    """Every registered kind's archiver, by kind name, in the registry's order."""
    return {kind.name: import_string(kind.archiver) for kind in registered() if kind.archiver}


def archive_all(
    client: RedisClient | None = None,
    *,
    now: When = None,
    kinds: Iterable[str] | None = None,
    dry_run: bool = False,
    using: str | None = None,
) -> list[ArchiveReport]:
    """One pass of every kind's archiver (or of ``kinds``'), into ``ARCHIVE_DATABASE``."""
    client = client or get_redis_connection()
    context = ArchiveContext(
        using=using or conf.ARCHIVE_DATABASE,
        now=to_timestamp(now),
        precisions=conf.ARCHIVE_PRECISIONS,
        batch=conf.ARCHIVE_BATCH,
        dry_run=dry_run,
    )
    known = archivers()
    selected = list(known) if kinds is None else list(kinds)
    with archive_tables(context.using):
        return [known[kind](client, context) for kind in selected]
