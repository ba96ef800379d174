"""Ordered funnels over an event series: who did step 1, then step 2, ... in that order.

``Funnel.ordered(orders, steps=[{"type": "view"}, {"type": "cart"}, {"type": "buy"}],
user="user", within=86400)``. An event *matches* a step when it holds each of the step's
fields with the same text (``str`` of the value as ``count_by`` groups it: ``42`` and ``"42"``
match). For each user (the text of the event's ``user`` field; events without it are left
out), the events of the range are taken in the series' order (timestamp, then id). The user
*reaches* step k when there are events e1, e2, ..., ek, each after the one before it in that
order, e_i matching step i, and ek no more than ``within`` seconds after e1 (the conversion
window, from the first step, as PostHog's ordered funnel has it). One event counts for one step
only. ``counts(start, end)[k-1]`` is the number of users who reach step k with every event in
``[start, end]``; each count is at most the one before it.

The events are read in pages (``SeriesQueries.PAGE`` a round trip); a range holding more than
``FUNNEL_MAX_EVENTS`` raises a ``ValueError`` before any counting: counts over a truncated range
would be wrong without saying so. Counting runs in Python, one pass over the events, O(events x
steps) time, O(users x steps) memory.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any

from ..conf import conf
from ..core.periods import Day, Period, get_zone
from ..core.timeutil import When, to_timestamp
from ..core.validation import positive_int, shown
from ..events.codec import encode_value, time_range, validate_field_name
from .bounds import MAX_STEPS, MAX_WINDOWS
from .naming import checked_name

#: A step: field -> the text its value must have.
Matcher = tuple[tuple[str, str], ...]


class OrderedFunnel:
    """Users who did the steps in order, each within ``within`` seconds of their first step."""

    def __init__(
        self,
        series: Any,
        steps: Sequence[Mapping[str, object]],
        *,
        user: str = "user",
        within: float = 86400,
        name: str | None = None,
    ) -> None:
        from ..events.model import EventSeries  # the events model imports widely

        if not isinstance(series, EventSeries):
            raise TypeError(f"An ordered funnel reads an EventSeries, not {shown(series)}.")
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
            raise TypeError(f"steps must be a list of dicts of field values, not {shown(steps)}.")
        if not 1 <= len(steps) <= MAX_STEPS:
            raise ValueError(f"A funnel has 1 to {MAX_STEPS} steps, not {len(steps)}.")
        self.series = series
        self.steps: tuple[Matcher, ...] = tuple(_matcher(step) for step in steps)
        self.user = validate_field_name(user)
        if isinstance(within, bool) or not isinstance(within, (int, float)):
            raise TypeError(f"within is a number of seconds, not {shown(within)}.")
        if not (math.isfinite(within) and within >= 0):
            raise ValueError(f"within must be a finite number of seconds >= 0, not {within!r}.")
        self.within = float(within)
        self.name: str | None = checked_name(name)

    def __repr__(self) -> str:
        return f"<OrderedFunnel {self.name or ''} over {self.series.name!r}>"

    @property
    def labels(self) -> list[str]:
        """Each step as ``field=value, ...`` (``any event`` for an empty one)."""
        return [", ".join(f"{f}={v}" for f, v in step) or "any event" for step in self.steps]

    def counts(self, start: When, end: When) -> list[int]:
        """Users reaching each step with events in ``[start, end]`` (see the module)."""
        lo, hi = time_range(start, end)
        limit = conf.FUNNEL_MAX_EVENTS
        return self.count_events(_bounded(self.series.between(lo, hi, limit + 1), limit))

    async def acounts(self, start: When, end: When) -> list[int]:
        """``counts`` awaited."""
        lo, hi = time_range(start, end)
        limit = conf.FUNNEL_MAX_EVENTS
        return self.count_events(_bounded(await self.series.abetween(lo, hi, limit + 1), limit))

    def over_time(
        self, days: int, when: When = None, zone: tzinfo | None = None
    ) -> list[tuple[Period, list[int]]]:
        """``counts`` of each of the ``days`` days ending with ``when``'s, oldest first, from
        one bounded read of the whole range (the events of each day counted apart)."""
        chosen, lo, hi, zone = self._days(days, when, zone)
        limit = conf.FUNNEL_MAX_EVENTS
        return self._by_day(chosen, _bounded(self.series.between(lo, hi, limit + 1), limit), zone)

    async def aover_time(
        self, days: int, when: When = None, zone: tzinfo | None = None
    ) -> list[tuple[Period, list[int]]]:
        """``over_time`` awaited."""
        chosen, lo, hi, zone = self._days(days, when, zone)
        limit = conf.FUNNEL_MAX_EVENTS
        events = _bounded(await self.series.abetween(lo, hi, limit + 1), limit)
        return self._by_day(chosen, events, zone)

    @staticmethod
    def _days(
        days: int, when: When, zone: tzinfo | None
    ) -> tuple[list[Period], float, float, tzinfo]:
        days = positive_int(days, "days")
        if days > MAX_WINDOWS:
            raise ValueError(f"A funnel is counted over at most {MAX_WINDOWS} days, not {days}.")
        zone = zone or get_zone()
        today = Day.containing(when, zone)
        chosen = [today.shift(back - days + 1) for back in range(days)]
        return chosen, chosen[0].start_ts, min(chosen[-1].end_ts, to_timestamp(None)), zone

    def _by_day(
        self, chosen: list[Period], events: list[dict[str, Any]], zone: tzinfo
    ) -> list[tuple[Period, list[int]]]:
        by_day: dict[Any, list[dict[str, Any]]] = {}
        for event in events:
            local = datetime.fromtimestamp(event["timestamp"], zone).date()
            by_day.setdefault(local, []).append(event)
        return [(day, self.count_events(by_day.get(day.start.date(), []))) for day in chosen]

    def count_events(self, events: Iterable[Mapping[str, Any]]) -> list[int]:
        """The counts over ``events`` (dicts as ``EventSeries.between`` returns them)."""
        steps = len(self.steps)
        # Per user, per step: the latest first-step time among the chains reaching that step
        # (a later start leaves more of the window for the steps to come).
        starts: dict[str, list[float | None]] = {}
        ordered = sorted(events, key=lambda e: (float(e["timestamp"]), int(e["id"])))
        for event in ordered:
            who = event.get(self.user)
            if who is None:
                continue
            matched = [k for k, step in enumerate(self.steps) if _matches(event, step)]
            if not matched:
                continue
            chains = starts.setdefault(_text(self.user, who), [None] * steps)
            when = float(event["timestamp"])
            for k in reversed(matched):  # one event, one step: step k from chains before it
                if k == 0:
                    chains[0] = when
                    continue
                begun = chains[k - 1]
                if begun is not None and when - begun <= self.within:
                    current = chains[k]
                    chains[k] = begun if current is None else max(current, begun)
        return [sum(1 for chains in starts.values() if chains[k] is not None) for k in range(steps)]


def _bounded(events: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    if len(events) > limit:
        raise ValueError(
            f"An ordered funnel reads at most FUNNEL_MAX_EVENTS = {limit} events and this range "
            f"holds more: use a shorter range, or raise the setting."
        )
    return events


def _matcher(step: object) -> Matcher:
    if not isinstance(step, Mapping):
        raise TypeError(f"A step of an ordered funnel is a dict of values, not {shown(step)}.")
    pairs = []
    for field, value in step.items():
        validate_field_name(field)
        pairs.append((field, encode_value(field, value)[1]))
    return tuple(sorted(pairs))


def _text(field: str, value: object) -> str:
    try:
        return encode_value(field, value)[1]
    except (TypeError, ValueError):
        return str(value)


def _matches(event: Mapping[str, Any], step: Matcher) -> bool:
    for field, text in step:
        value = event.get(field)
        if value is None or _text(field, value) != text:
            return False
    return True
