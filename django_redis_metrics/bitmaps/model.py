"""UniqueBitmap: one bit per user per period (Spool's design), counted and combined in Redis.

``mark`` sets the user's bit in the key of every configured period (write-time fan-out, as in
bitmapist), so the count of a day, an ISO week or a month is a single BITCOUNT. Ranges and
combinations are lazy queries (``query.py``) covered by the fewest period keys: whole months,
then whole ISO weeks, then days. User ids become bit offsets as ``ids.py`` says.

On Redis Cluster each bitmap's keys share one hash tag, so a query over one bitmap is one script
in one slot.

A labelled bitmap (``labels=``) marks its series (``bitmap.labels(plan="pro").mark(user)``),
each a bitmap of its own; its reads without ``labels()`` answer for the union of its series
(``unite.py``).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from datetime import date, timedelta, tzinfo
from typing import ClassVar

from asgiref.sync import sync_to_async

from ..core import catalogue, deferral
from ..core.aio import get_async_connection
from ..core.batch import Batch, calls_steps, run_calls
from ..core.connection import AnyRedisClient, get_redis_connection
from ..core.cover import NoDayKeys, cover, cover_days
from ..core.drive import adrive, drive
from ..core.keys import metric_key, to_str
from ..core.labels.admission import aadmitted, admitted
from ..core.periodic import (
    DEFAULT_PERIODS,
    PeriodicMetric,
    clipped_range,
    days_back,
    horizon_day,
    oldest_kept_day,
)
from ..core.periods import (
    PERIOD_NAMES,
    Day,
    Month,
    Period,
    Week,
    get_zone,
    period_class,
)
from ..core.steps import Op, Steps
from ..core.timeutil import When, to_timestamp
from ..core.validation import positive_int, shown
from . import query_plan
from .archived import ArchivedBits, aprefetch, archived_counts, period_stand_ins, split_archived
from .cohort import cohort_steps, pair_steps
from .history import BitmapHistory
from .ids import normalize_id
from .keys import KIND
from .marking import fast
from .marking import plan as mark_plan
from .marking import steps as mark_steps
from .marking.plan import generation_ttl_ms as generation_ttl_ms  # the cleaner imports it from here
from .query import BitmapQuery, PeriodUnion, contains_steps, evaluate, script
from .retention import MAX_KEEP, period_bounds, retention

#: Most periods of a retention table (``cohort``): its script calls grow as their square
#: (120 periods: 7,260 BITOP AND over bounded keys, in one pipelined round trip).
MAX_COHORT_PERIODS = 120


class UniqueBitmap(PeriodicMetric, BitmapHistory):
    """Unique users per hour, day, ISO week and month.

    >>> active = UniqueBitmap("active_users")
    >>> active.mark(42)
    >>> active.count("day")
    >>> (active.between(start, end) & premium.month(2026, 11)).count()
    """

    KIND: ClassVar[str] = KIND
    LABEL: ClassVar[str] = "bitmap"
    NOUN: ClassVar[str] = "Bitmap"
    objects: ClassVar[catalogue.MetricManager[UniqueBitmap]] = catalogue.MetricManager()

    #: A period is cached in ranges only once it ended this long ago (seconds), so marks stamped
    #: just before its end that reach Redis a little later (batches, clock skew) are never missed.
    CACHE_GRACE: ClassVar[int] = 600
    #: Most users one ``mark_many`` script call marks (in each of its periods): Redis runs
    #: about 1,000 SETBITs a millisecond, so a call with 3 periods blocks it about 3 ms.
    MAX_MARKS_PER_CALL: ClassVar[int] = 1000
    #: Most ``mark_many`` script calls sent in one pipelined round trip (bounds the memory of
    #: the request and of its replies).
    CALLS_PER_ROUND_TRIP: ClassVar[int] = 50

    def __init__(
        self,
        name: str,
        periods: Sequence[str] = DEFAULT_PERIODS,
        *,
        labels: Sequence[str] = (),
        max_series: int | None = None,
    ) -> None:
        super().__init__(name, periods, labels=labels, max_series=max_series)
        self._periods_csv = ",".join(self.periods)

    # Keys

    def period_keys(self, periods: tuple[Period, ...]) -> list[str]:
        """The keys of ``periods`` (the prefix read once)."""
        base = metric_key(KIND, self.name)
        return [f"{base}:{p.name}:{p.suffix}" for p in periods]

    @property
    def gen_key(self) -> str:
        """The generation of cached unions: changed (never deleted; it expires after the cache
        TTL) by ``delete``, by the cleaner and by a mark into a period that is over."""
        return metric_key(KIND, self.name, "gen")

    # Writing

    @admitted
    def mark(
        self,
        user_id: object,
        when: When = None,
        *,
        batch: Batch | None = None,
        defer: bool = False,
    ) -> None:
        """Set ``user_id``'s bit in every configured period holding ``when``: one atomic round
        trip (a first-seen str/UUID id on Redis Cluster costs one more, to map it; a period key
        found missing, evicted or deleted, one more to restore its expiry and index).

        With ``batch``, the write is queued and sent with the batch's other writes (marks of
        this bitmap now may share one script call). With ``defer=True`` it is checked now and
        handed to the process's sender, as the middleware's writes are: it never waits on Redis
        nor raises because Redis is away.
        """
        context = mark_plan.mark_settings(retention)
        value = normalize_id(user_id, context.highest)
        timestamp = to_timestamp(when)
        if deferral.check_defer(defer, batch):
            deferral.sink().mark(self, value, timestamp)
            return
        client = get_redis_connection()
        if batch is None and fast.try_mark(
            client, self.name, self.periods, self._periods_csv, value, timestamp, context
        ):
            return
        call = drive(mark_steps.mark_steps(client, self, value, timestamp, context), client)
        if batch is not None:
            if not mark_plan.join(batch.calls, call, self.MAX_MARKS_PER_CALL):
                batch.add(call)
        else:
            run_calls(client, [call])

    @admitted
    def mark_many(self, marks: Iterable[tuple[object, When]]) -> int:
        """Mark many ``(user_id, when)`` pairs, grouped by period; for imports and backfills.

        All input is validated before anything is written (one kind of id throughout). Each
        script call is atomic and sets at most ``MAX_MARKS_PER_CALL`` users' bits in one set of
        periods, ``CALLS_PER_ROUND_TRIP`` calls a round trip. Returns the number of calls.
        """
        context = mark_plan.mark_settings(retention)
        base = mark_plan.base_key(self.name, context.prefix)
        groups, kind = mark_plan.group_marks(base, self.periods, marks, context.zone, context.keep)
        client = get_redis_connection()
        return drive(mark_steps.mark_many_steps(client, self, groups, kind, context), client)

    @aadmitted
    async def amark(self, user_id: object, when: When = None) -> None:
        """``mark`` awaited: one atomic round trip (a first-seen str/UUID id on Redis Cluster
        costs one more). (``mark(defer=True)`` never waits on Redis and suits async views.)"""
        client = get_async_connection()
        await adrive(self._mark_steps(client, user_id, when), client)

    def _mark_steps(self, client: AnyRedisClient, user_id: object, when: When) -> Steps[None]:
        """A mark as steps (the async path: the bare transaction of ``mark`` is sync only)."""
        context = mark_plan.mark_settings(retention)
        value = normalize_id(user_id, context.highest)
        timestamp = to_timestamp(when)
        call = yield from mark_steps.mark_steps(client, self, value, timestamp, context)
        yield from calls_steps([call])

    def delete(self) -> None:
        """Remove every period key of this bitmap and its catalogue entry (in bounded steps),
        and its series."""
        self.delete_series()
        client = get_redis_connection()
        for name in PERIOD_NAMES:
            index = self.index_key(name)
            while True:
                members = [to_str(m) for m in client.zrange(index, 0, 499)]  # type: ignore[arg-type]
                if not members:
                    break
                keys = [metric_key(KIND, self.name, name, m) for m in members]
                script("bitmap_drop")(
                    client, [index, self.gen_key, *keys], [generation_ttl_ms(), *members]
                )
        # A new generation even with no period left, so no cached union is ever used again.
        script("bitmap_drop")(client, [self.index_key("day"), self.gen_key], [generation_ttl_ms()])
        client.delete(self.meta_key)
        catalogue.unregister(client, KIND, self.name, self.meta_key)

    # Reading

    def count(self, period: str | Period, when: When = None) -> int:
        """Distinct users in the ``period`` ("hour", "day", "week", "month") holding ``when``:
        one BITCOUNT; a labelled bitmap's counts the union of its series. A period older than
        ``BITMAP_RETENTION`` keeps is answered from the archive (``history.md``)."""
        chosen = self._period(period, when)
        if split_archived([chosen], retention(), time.time())[1]:
            return archived_counts(self, [chosen])[0]
        client = get_redis_connection()
        return drive(self._count_steps(client, chosen, when), client)

    def _count_steps(self, client: AnyRedisClient, period: str | Period, when: When) -> Steps[int]:
        union = self.query(period, when)
        plain = self._own_count_steps(self.key(union.periods[0]))
        return int((yield from evaluate(client, union, "count", plain)))

    @staticmethod
    def _own_count_steps(key: str) -> Steps[int]:
        return int((yield Op("bitcount", key)))

    async def acount(self, period: str | Period, when: When = None) -> int:
        """``count`` awaited."""
        chosen = self._period(period, when)
        if split_archived([chosen], retention(), time.time())[1]:
            return (await sync_to_async(archived_counts)(self, [chosen]))[0]
        client = get_async_connection()
        return await adrive(self._count_steps(client, period, when), client)

    async def acontains(self, user_id: object, period: str | Period, when: When = None) -> bool:
        """``contains`` awaited."""
        client = get_async_connection()
        return await adrive(self._contains_steps(client, user_id, period, when), client)

    def contains(self, user_id: object, period: str | Period, when: When = None) -> bool:
        """Whether ``user_id`` was marked in the ``period`` holding ``when``."""
        client = get_redis_connection()
        return drive(self._contains_steps(client, user_id, period, when), client)

    def _contains_steps(
        self, client: AnyRedisClient, user_id: object, period: str | Period, when: When
    ) -> Steps[bool]:
        union = self.query(period, when)
        return (yield from contains_steps(client, union, normalize_id(user_id)))

    def query(self, period: str | Period, when: When = None) -> PeriodUnion:
        """The users of one period, as a query to combine with others."""
        chosen = self._period(period, when)
        return PeriodUnion(self, (chosen,), cacheable=False)

    def day(self, when: When = None) -> PeriodUnion:
        return self.query("day", when)

    def week(self, iso_year: int, week: int) -> PeriodUnion:
        """The ISO week ``week`` of ``iso_year`` (weeks 52 or 53 may belong to the next year)."""
        return self.query(Week.of(iso_year, week))

    def month(self, year: int, month: int) -> PeriodUnion:
        return self.query(Month.of(year, month))

    def between(self, start: When | date, end: When | date) -> BitmapQuery:
        """Users marked on any day from ``start``'s day to ``end``'s day (inclusive); ``start``
        and ``end`` are instants, or ``date`` objects naming days in ``TIME_ZONE``.

        Covered by whole months, whole ISO weeks and leftover days (only the periods this bitmap
        keeps); the part that is over is cached, the running part is always read fresh.
        """
        zone = get_zone()
        now = to_timestamp(None)
        # Not the current retention's oldest day: a key kept under a longer one stays readable
        # until a new period drops it; the longest retention allowed bounds the range.
        oldest = oldest_kept_day(self.periods, MAX_KEEP, period_bounds, zone, now)
        clipped = clipped_range(
            query_plan.local_date(start, zone),
            query_plan.local_date(end, zone),
            oldest,
            horizon_day(self.periods, zone, now),
        )
        cover = self._cover_range(*(clipped or self._gone(oldest, zone)))
        held, gone = split_archived(cover, retention(), now, bits=True)
        settled = now - self.CACHE_GRACE
        first, *others = [
            *([PeriodUnion(ArchivedBits(self, gone), tuple(gone))] if gone else []),
            *(
                PeriodUnion(self, part, cacheable=part[0].end_ts <= settled)
                for part in query_plan.split(tuple(held), settled)
            ),
        ]
        query: BitmapQuery = first
        for part in others:
            query = query | part
        return query

    def _gone(self, oldest: date, zone: tzinfo) -> tuple[date, date]:
        """The days of a period this bitmap no longer keeps (the one before ``oldest``): what
        a range holding no day that can hold data is read as, a query that counts 0."""
        finest = next((name for name in ("day", "week", "month") if name in self.periods), "day")
        gone = period_class(finest).containing(Day.of(oldest, zone).start_ts - 1, zone)
        return gone.start.date(), (gone.end - timedelta(seconds=1)).date()

    def last(self, days: int, when: When = None) -> BitmapQuery:
        """Users marked in the ``days`` days ending with ``when``'s day (today by default)."""
        days = positive_int(days, "days")
        today = query_plan.local_date(when, get_zone())
        return self.between(days_back(today, days), today)

    def _cover_range(self, first: date, last: date) -> tuple[Period, ...]:
        try:
            return cover(self.periods, first, last, get_zone())
        except NoDayKeys as exc:
            raise NoDayKeys(f"Bitmap {self.name!r} {exc}") from None

    def _cover(self, days: list[Day]) -> list[Period]:
        """The fewest keys whose union is exactly these consecutive days."""
        return cover_days(days, self.periods, f"Bitmap {self.name!r}")

    def cohort(
        self,
        period: str = "week",
        start: When = None,
        periods: int = 8,
        returning: UniqueBitmap | None = None,
    ) -> list[list[int]]:
        """A retention table: row i holds the users of period i, then how many of them were
        marked again 1, 2, ... periods later (up to the last of ``periods`` periods).

        With ``returning=other`` (another bitmap, labelled or not: a labelled one is read as
        the union of its series), the later counts are of the users of period i found in
        ``other`` (signed up, then bought): same shape, same bounds.

        ``start`` is any instant of the first period (default: ``periods - 1`` periods ago).
        A script call per row (per ``MAX_SCRIPT_SOURCES`` keys of a row), each BITOP AND +
        BITCOUNT over a bounded number of keys, all sent in one pipelined round trip (a
        labelled bitmap's periods are united first, and on Redis Cluster ``other``'s are
        copied into this bitmap's slot first: ``cohort.py``). Weeks and months Redis no longer
        holds are read from the archive (a table against ``other`` reads periods Redis holds).
        """
        chosen, archived = self._cohort_plan(period, start, periods, returning)
        client = get_redis_connection()
        return drive(self._cohort_steps(client, chosen, returning, archived), client)

    async def acohort(
        self,
        period: str = "week",
        start: When = None,
        periods: int = 8,
        returning: UniqueBitmap | None = None,
    ) -> list[list[int]]:
        """``cohort`` awaited."""
        chosen, archived = self._cohort_plan(period, start, periods, returning)
        await aprefetch(list(archived.values()))
        client = get_async_connection()
        return await adrive(self._cohort_steps(client, chosen, returning, archived), client)

    def _cohort_steps(
        self,
        client: AnyRedisClient,
        chosen: list[Period],
        returning: UniqueBitmap | None,
        archived: dict[Period, ArchivedBits],
    ) -> Steps[list[list[int]]]:
        if returning is None:
            return (yield from cohort_steps(client, self, chosen, archived))
        if archived:
            raise ValueError(
                "A retention table against another bitmap reads the periods Redis holds; "
                f"{next(iter(archived)).key_part} of {self.name!r} is archived."
            )
        return (yield from pair_steps(client, self, returning, chosen))

    def _cohort_plan(
        self, period: str, start: When, periods: int, returning: UniqueBitmap | None
    ) -> tuple[list[Period], dict[Period, ArchivedBits]]:
        """The checks of ``cohort`` (all before any request), its periods, the archived ones'
        stand-ins."""
        periods = positive_int(periods, "periods")
        if periods > MAX_COHORT_PERIODS:
            raise ValueError(
                f"A retention table has at most {MAX_COHORT_PERIODS} periods (its cost grows "
                f"as their square), not {shown(periods)}."
            )
        if returning is not None and not isinstance(returning, UniqueBitmap):
            raise TypeError(f"returning must be a UniqueBitmap, not {shown(returning)}.")
        first = (
            self._period(period, start)
            if start is not None
            else self._period(period).shift(-(periods - 1))
        )
        if returning is not None:
            returning._period(first)  # it must keep these periods too
        chosen = [first.shift(i) for i in range(periods)]
        return chosen, period_stand_ins(self, chosen, retention(), time.time())
