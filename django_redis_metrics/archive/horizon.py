"""Which periods of the kinds kept per calendar period reads take from the archive, and the
bound of one ``history()`` (no database here: the models import it).

A period is *archived* when it is older than its kind's retention keeps at the moment of the
read: Redis has forgotten it (or is about to), so reads answer it from the archive's rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..core.periods import Period, period_class
from ..core.retention import period_retention
from ..core.validation import shown

#: The period names archived (hours are not: a day holds what history needs of them).
ARCHIVED_PERIODS = ("day", "week", "month")
#: Seconds after its end a closed period may still receive late writes (batches, deferred
#: writes, clock skew; ``UniqueBitmap.CACHE_GRACE``'s): a pass that archives a period closed
#: less long ago leaves its cursor before the period's end, so the next pass reads it again.
LATE_GRACE = 600
#: Most periods one ``history()`` call reads (5 years of days, 38 of weeks, 166 of months):
#: each is a row of the database or a command to Redis.
MAX_HISTORY_PERIODS = 2000


def is_archived(period: Period, keep: Mapping[str, int], now: float) -> bool:
    """Whether the retention ``keep`` no longer holds ``period`` at ``now`` (hours are never
    archived: what Redis forgot of them is gone)."""
    if period.name not in ARCHIVED_PERIODS:
        return False
    current = period_class(period.name).containing(now, period.tz)
    return period.start_ts < period_retention(current, keep[period.name])[1]


def history_periods(
    noun: str, name: str, kept: tuple[str, ...], period: object, start: float, end: float
) -> list[Period]:
    """The periods named ``period`` from ``start``'s to ``end``'s, checked and bounded."""
    if not isinstance(period, str):
        raise TypeError(f"period must be a period name (a str), not {shown(period)}.")
    first = period_class(period).containing(start)
    if period not in kept:
        raise ValueError(f"{noun} {name!r} keeps no {period} periods; it keeps {kept}.")
    if end < start:
        raise ValueError(f"end ({end}) must not be before start ({start}).")
    found: list[Period] = []
    current = first
    while current.start_ts <= end:
        if len(found) == MAX_HISTORY_PERIODS:
            raise ValueError(
                f"A history reads at most {MAX_HISTORY_PERIODS:,} periods; {start} to {end} "
                f"holds more {period}s: read it in parts."
            )
        found.append(current)
        current = current.next
    return found


def cursor_after(last_end: float, now: float) -> int:
    """Where a pass that archived every period ending by ``last_end`` leaves its cursor: the
    next pass reads again what may still receive late writes (see ``LATE_GRACE``)."""
    return int(min(last_end, now - LATE_GRACE))


def merged_counts(
    held: Sequence[Period], counts: Sequence[int], gone: Sequence[Period], archived: Sequence[int]
) -> list[tuple[int, int]]:
    """``(period start, count)`` of Redis' periods (``held``, ``counts``) and the archive's
    (``gone``, ``archived``), oldest first: what a set's ``history()`` returns."""
    found = zip([*held, *gone], [*counts, *archived], strict=True)
    return sorted((int(period.start_ts), int(count)) for period, count in found)
