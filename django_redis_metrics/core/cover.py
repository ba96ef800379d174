"""Covering a range of consecutive days with the fewest calendar period keys.

Metrics kept per calendar period (``UniqueBitmap``, ``UniqueEstimate``) answer a range of days
with the union of some of their period keys: whole months inside the range first, then whole
ISO weeks, then the days left over. Overlaps are harmless in a union, so a week straddling a
month already taken is still used when it saves days.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from .periods import PERIOD_NAMES, Day, Period, period_class


def _always(period: Period) -> bool:
    return True


def cover_days(
    days: Sequence[Day],
    periods: Collection[str],
    owner: str,
    usable: Callable[[Period], bool] = _always,
) -> list[Period]:
    """The fewest periods of the kinds in ``periods`` whose union is exactly ``days``
    (consecutive, oldest first), in time order.

    ``usable(period)`` says whether a period's key can still hold data (its retention is not
    over): a month or week that is not usable is replaced by its weeks or days, and a leftover
    day that is not usable is left out (it holds nothing). ``owner`` names the metric in the
    ``ValueError`` raised when the range is not made of whole periods the metric keeps.
    """
    first, last = days[0].start_ts, days[-1].end_ts
    covered: set[float] = set()
    whole: set[float] = set()  # days inside a whole kept month or week, usable or not
    cover: list[Period] = []
    for coarse in ("month", "week"):
        if coarse not in periods:
            continue
        seen: set[float] = set()
        for day in days:
            period = period_class(coarse).containing(day.start_ts, day.tz)
            if period.start_ts in seen or day.start_ts in covered:
                continue
            seen.add(period.start_ts)
            if period.start_ts >= first and period.end_ts <= last:
                inside = {d.start_ts for d in period.days()}
                whole.update(inside)
                if usable(period):
                    cover.append(period)
                    covered.update(inside)
    leftover = [d for d in days if d.start_ts not in covered]
    if "day" in periods:
        return sorted([*cover, *(d for d in leftover if usable(d))])
    if any(d.start_ts not in whole for d in leftover):
        raise ValueError(
            f"{owner} keeps no day keys, so it cannot answer a range that is not made of whole "
            f"{' or '.join(p for p in PERIOD_NAMES if p in periods)}s."
        )
    return sorted(cover)
