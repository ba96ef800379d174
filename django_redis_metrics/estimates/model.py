"""UniqueEstimate: approximate distinct counts per hour, day, ISO week and month (HyperLogLog).

``add`` puts the item into the HyperLogLog of every configured period holding its time (the
write-time fan-out of ``UniqueBitmap.mark``), so the count of a period is one ``PFCOUNT``, and a
range is the ``PFCOUNT`` of the fewest period keys covering it. Each key takes at most about
12 KB whatever the number of items, with a standard error of about 0.81 %; unlike a bitmap,
an estimate cannot say whether an item is in it nor intersect two sets.

A labelled estimate (``labels=``) adds to its series (``visitors.labels(plan="pro").add(s)``),
each an estimate of its own; its counts without ``labels()`` answer for the union of its series.
"""

from __future__ import annotations

import time
from datetime import date, tzinfo
from typing import ClassVar

from ..core import catalogue, deferral
from ..core.aio import get_async_connection
from ..core.batch import Batch, ScriptCall, calls_steps, run_calls
from ..core.connection import AnyRedisClient, get_redis_connection
from ..core.cover import NoDayKeys, cover, cover_days
from ..core.drive import adrive, drive
from ..core.keys import catalogue_key, metric_key, to_str
from ..core.labels.admission import aadmitted, admitted
from ..core.periodic import (
    PeriodicMetric,
    clipped_range,
    days_back,
    horizon_day,
    oldest_kept_day,
)
from ..core.periods import (
    PERIOD_NAMES,
    Day,
    Period,
    day_of,
    get_zone,
    period_class,
)
from ..core.retention import MAX_AHEAD, MAX_PERIODS_KEPT
from ..core.steps import Op, Steps
from ..core.timeutil import When, to_timestamp
from ..core.validation import positive_int, shown
from .archived import split_archived
from .history import EstimateHistory
from .items import normalize_item
from .keys import KIND
from .query import EstimateQuery, script
from .retention import is_retained, period_bounds, retention

#: Index entries (periods) dropped per script call by ``delete`` and the cleaner.
DROP_BATCH = 500


#: The period of each kind last written, per zone and retention, with its retention bounds:
#: writes arrive in time order, so most reuse it.
_last_periods: dict[tuple[str, tzinfo, int], tuple[Period, int, float]] = {}


def _pfcount(key: str) -> Steps[int]:
    # Through execute_command: redis-py's cluster pipeline refuses its pfcount().
    return int((yield Op("execute_command", "PFCOUNT", key)))


def _bounded(name: str, timestamp: float, zone: tzinfo, keep: int) -> tuple[Period, int, float]:
    """The ``name`` period holding ``timestamp`` with ``period_bounds`` of it, reusing the last
    answer while ``timestamp`` still falls inside that period (exact: it knows its bounds)."""
    last = _last_periods.get((name, zone, keep))
    if last is not None and last[0].start_ts <= timestamp < last[0].end_ts:
        return last
    period = period_class(name).containing(timestamp, zone)
    found = _last_periods[(name, zone, keep)] = (period, *period_bounds(period, keep))
    return found


class UniqueEstimate(PeriodicMetric, EstimateHistory):
    """Approximate distinct items (visitors, sessions, search terms) per calendar period.

    >>> visitors = UniqueEstimate("visitors")
    >>> visitors.add(request.session.session_key)
    >>> visitors.count("day")
    >>> visitors.between(start, end).count()
    """

    KIND: ClassVar[str] = KIND
    LABEL: ClassVar[str] = "unique estimate"
    NOUN: ClassVar[str] = "Estimate"
    objects: ClassVar[catalogue.MetricManager[UniqueEstimate]] = catalogue.MetricManager()

    # Writing

    @admitted
    def add(
        self,
        item: object,
        when: When = None,
        *,
        batch: Batch | None = None,
        defer: bool = False,
    ) -> None:
        """Count ``item`` (a str, int or UUID; see ``items.py``) in every configured period
        holding ``when``: one atomic round trip.

        With ``batch``, the write is queued and sent with the batch's other writes. With
        ``defer=True`` it is checked now and handed to the process's sender, as the
        middleware's writes are: it never waits on Redis nor raises because Redis is away.
        """
        text = normalize_item(item)
        timestamp = to_timestamp(when)
        if batch is not None and not isinstance(batch, Batch):
            raise TypeError(f"batch must be a Batch, not {type(batch).__name__}: {shown(batch)}.")
        if deferral.check_defer(defer, batch):
            # Through add(): a series is admitted where the write is sent (the sender's thread).
            deferral.sink().write(self.name, lambda later: self.add(text, timestamp, batch=later))
            return
        self._add(text, timestamp, batch)

    def _add(self, text: str, timestamp: float, batch: Batch | None) -> None:
        client = get_redis_connection()
        call = self._add_call(text, timestamp, catalogue.inline_catalogue(client))
        if batch is not None:
            batch.add(call)
        else:
            run_calls(client, [call])

    def _add_call(self, text: str, timestamp: float, inline: bool) -> ScriptCall:
        zone = get_zone()
        keep = retention()
        periods = [_bounded(name, timestamp, zone, keep[name]) for name in self.periods]
        base = metric_key(KIND, self.name)  # the prefix is read once per write, not per key
        keys = [
            f"{base}:meta",
            *(f"{base}:{p.name}:{p.suffix}" for p, _, _ in periods),
            *(f"{base}:index:{p.name}" for p, _, _ in periods),
        ]
        if inline:
            keys.append(catalogue_key(KIND))
        args: list[str | int | float] = [
            self.name,
            len(periods),
            int(inline),
            text,
            ",".join(self.periods),
            repr(timestamp),
            MAX_AHEAD,
        ]
        for period, expires, oldest in periods:
            args += [period.suffix, int(period.start_ts), expires, int(oldest)]
        return ScriptCall(script("estimate_add"), keys, args, self._listing_steps)

    @aadmitted
    async def aadd(self, item: object, when: When = None) -> None:
        """``add`` awaited: one atomic round trip. (``add(defer=True)`` never waits on Redis
        either, and suits async views as well.)"""
        client = get_async_connection()
        await adrive(self._add_steps(item, when, catalogue.inline_catalogue(client)), client)

    def _add_steps(self, item: object, when: When, inline: bool) -> Steps[None]:
        text, timestamp = normalize_item(item), to_timestamp(when)
        yield from calls_steps([self._add_call(text, timestamp, inline)])

    def delete(self) -> None:
        """Remove every period key of this estimate and its catalogue entry (in bounded steps),
        and its series."""
        self.delete_series()
        client = get_redis_connection()
        for name in PERIOD_NAMES:
            index = self.index_key(name)
            while True:
                members = [to_str(m) for m in client.zrange(index, 0, DROP_BATCH - 1)]  # type: ignore[arg-type]
                if not members:
                    break
                keys = [metric_key(KIND, self.name, name, m) for m in members]
                script("estimate_drop")(client, [index, *keys], members)
        client.delete(self.meta_key)
        catalogue.unregister(client, KIND, self.name, self.meta_key)

    # Reading

    def exists(self) -> bool:
        """Whether the estimate holds data (its meta hash, written by every write, exists)."""
        return drive(self._exists_steps())

    def count(self, period: str | Period, when: When = None) -> int:
        """Distinct items (an estimate) in the ``period`` ("hour", "day", "week", "month")
        holding ``when`` (default: now): one ``PFCOUNT``; a labelled estimate's counts the
        union of its series. A period older than ``ESTIMATE_RETENTION`` keeps is counted from
        its archived registers (``archived.py``)."""
        if archived := self._archived(period, when):
            return archived.count()
        client = get_redis_connection()
        return drive(self._count_steps(client, period, when), client)

    async def acount(self, period: str | Period, when: When = None) -> int:
        """``count`` awaited: one ``PFCOUNT``."""
        if archived := self._archived(period, when):
            return await archived.acount()
        client = get_async_connection()
        return await adrive(self._count_steps(client, period, when), client)

    def _archived(self, period: str | Period, when: When) -> EstimateQuery | None:
        """The count of an archived period, or ``None`` when Redis holds it."""
        chosen = self._period(period, when)
        gone = split_archived([chosen], time.time())[1]
        return EstimateQuery(self, (), (chosen,)) if gone else None

    def _count_steps(self, client: AnyRedisClient, period: str | Period, when: When) -> Steps[int]:
        chosen = self._period(period, when)
        key = self.key(chosen)
        return (yield from EstimateQuery(self, (chosen,)).count_steps(client, _pfcount(key)))

    def between(self, start: When | date, end: When | date) -> EstimateQuery:
        """Items added on any day from ``start``'s day to ``end``'s day (inclusive); ``start``
        and ``end`` are instants, or ``date`` objects naming days in ``TIME_ZONE``.

        Covered by the fewest keys still retained: whole months, whole ISO weeks, then the
        leftover days (only the periods this estimate keeps); counted by one ``PFCOUNT``.
        Periods older than ``ESTIMATE_RETENTION`` keeps are counted from their archived
        registers (``archived.py``).
        """
        zone = get_zone()
        now = time.time()
        # Not the current retention's oldest day: what it no longer keeps, the archive may.
        oldest = oldest_kept_day(self.periods, MAX_PERIODS_KEPT, period_bounds, zone, now)
        clipped = clipped_range(
            day_of(start, zone).date,
            day_of(end, zone).date,
            oldest,
            horizon_day(self.periods, zone, now),
        )
        if clipped is None:
            return EstimateQuery(self, ())
        first, last = clipped
        kept = oldest_kept_day(self.periods, retention(), period_bounds, zone, now)
        if first < kept and "day" not in self.periods:
            # Where Redis forgot, a range starts with the first whole period kept (as it did
            # when those days were not planned at all).
            finest = period_class(next(p for p in ("week", "month") if p in self.periods))
            period = finest.containing(Day.of(first, zone).start_ts, zone)
            first = first if period.start.date() == first else period.next.start.date()
            if first > last:
                return EstimateQuery(self, ())
        try:
            periods = cover(self.periods, first, last, zone)
        except NoDayKeys as exc:
            raise NoDayKeys(f"Estimate {self.name!r} {exc}") from None
        held, gone = split_archived(periods, now)
        return EstimateQuery(self, tuple(held), tuple(gone))

    def last(self, days: int, when: When = None) -> EstimateQuery:
        """Items added in the ``days`` days ending with ``when``'s day (today by default)."""
        days = positive_int(days, "days")
        today = day_of(when, get_zone()).date
        return self.between(days_back(today, days), today)

    def _cover(self, days: list[Day], now: float | None = None) -> list[Period]:
        """The fewest keys still retained at ``now`` whose union is these consecutive days."""
        keep = retention()
        moment = time.time() if now is None else now
        return cover_days(
            days,
            self.periods,
            f"Estimate {self.name!r}",
            usable=lambda period: is_retained(period, keep, moment),
        )
