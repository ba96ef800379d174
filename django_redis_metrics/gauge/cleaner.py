"""The gauge cleaner: trims gauges nobody writes any more, compacts, retires the empty
ones (see ``statistic/slice_cleaning.py``); writes need none of it."""

from __future__ import annotations

from ..core.cleaning import CleanupReport
from ..core.connection import RedisClient
from ..core.timeutil import When
from ..statistic.slice_cleaning import clean_sliced
from .keys import KIND as GAUGE_KIND


def clean_gauges(
    client: RedisClient | None = None, *, now: When = None, passes: int = 0, dry_run: bool = False
) -> CleanupReport:
    """One cleaning pass over every known gauge; ``passes`` selects the precisions due."""
    return clean_sliced(GAUGE_KIND, client, now=now, passes=passes, dry_run=dry_run)
