"""What one funnel may ask of Redis: how many steps, how many days over time, how many events
an ordered funnel reads (``FUNNEL_MAX_EVENTS``)."""

from __future__ import annotations

from ..core.validation import shown

#: Most steps of a funnel: one script call ANDs them all, reading one key per step.
MAX_STEPS = 16
#: Most windows (days) one ``over_time`` call counts: a funnel script call each.
MAX_WINDOWS = 366
#: Highest ``FUNNEL_MAX_EVENTS``: an ordered funnel holds the events it reads in memory.
MAX_EVENTS_LIMIT = 10_000_000


def validate_max_events(value: object) -> int:
    """``FUNNEL_MAX_EVENTS``: a positive int, at most ``MAX_EVENTS_LIMIT``."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_EVENTS_LIMIT:
        raise ValueError(
            f"must be an int from 1 to {MAX_EVENTS_LIMIT} (events read per ordered funnel "
            f"call), not {shown(value)}."
        )
    return int(value)
