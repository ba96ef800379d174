"""The statistic cleaner: trims statistics nobody writes any more, compacts, retires the empty
ones (see ``statistic/slice_cleaning.py``); writes need none of it."""

from __future__ import annotations

from ..core.cleaning import CleanupReport
from ..core.connection import RedisClient
from ..core.timeutil import When
from .keys import KIND as STATISTIC_KIND
from .slice_cleaning import clean_sliced


def clean_statistics(
    client: RedisClient | None = None, *, now: When = None, passes: int = 0, dry_run: bool = False
) -> CleanupReport:
    """One cleaning pass over every known statistic; ``passes`` selects the precisions due."""
    return clean_sliced(STATISTIC_KIND, client, now=now, passes=passes, dry_run=dry_run)
