"""UniqueBitmap: one bit per user per period (Spool's design), counted and combined in Redis.

``mark`` sets the user's bit in the key of every configured period (write-time fan-out, as in
bitmapist), so the count of a day, an ISO week or a month is a single BITCOUNT. Ranges and
combinations are lazy queries (``query.py``) covered by the fewest period keys: whole months,
then whole ISO weeks, then days. User ids become bit offsets as ``ids.py`` says.

On Redis Cluster each bitmap's keys share one hash tag, so a query over one bitmap is one script
in one slot.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import date, tzinfo
from typing import Any, ClassVar

from ..conf import conf
from ..core import catalogue, deferral
from ..core.base import Metric
from ..core.batch import Batch, ScriptCall, run_calls
from ..core.connection import AnyRedisClient, RedisClient, get_redis_connection
from ..core.cover import cover_days
from ..core.keys import catalogue_key, metric_key, temp_key, to_str, validate_name
from ..core.periods import (
    PERIOD_NAMES,
    Day,
    Month,
    Period,
    Week,
    days_between,
    get_zone,
    period_class,
)
from ..core.retention import MAX_AHEAD
from ..core.steps import Op, Steps, drive
from ..core.timeutil import When, to_timestamp
from ..core.validation import positive_int
from .aio import BitmapAsync
from .ids import (
    check_int_kind_steps,
    id_cache,
    id_kind,
    id_kind_key,
    id_map_keys,
    normalize_id,
    note_marked,
    read_bits_steps,
    resolve_ids_steps,
)
from .query import KIND, MAX_SCRIPT_SOURCES, TEMP_TTL_MS, BitmapQuery, PeriodUnion, script
from .retention import period_bounds, retention

DEFAULT_PERIODS = ("day", "week", "month")


#: The period each kind last resolved to, per zone: marks arrive in time order, so most reuse it.
_last_periods: dict[tuple[str, tzinfo], Period] = {}


def _containing(name: str, timestamp: float, zone: tzinfo) -> Period:
    """``period_class(name).containing(timestamp, zone)``, reusing the last answer while
    ``timestamp`` still falls inside it (exact: a period knows its own bounds)."""
    last = _last_periods.get((name, zone))
    if last is not None and last.start_ts <= timestamp < last.end_ts:
        return last
    period = _last_periods[(name, zone)] = period_class(name).containing(timestamp, zone)
    return period


def generation_ttl_ms() -> int:
    """A generation outlives every union cached under the one before it."""
    return (max(conf.BITMAP_CACHE_TTL, 86400) + 60) * 1000


def validate_periods(periods: object) -> tuple[str, ...]:
    """Known, distinct period names in canonical order (hour, day, week, month)."""
    if isinstance(periods, str | bytes) or not isinstance(periods, Iterable):
        raise TypeError(f"periods must be a sequence of period names, not {periods!r}.")
    names = list(periods)
    if not names:
        raise ValueError("periods must name at least one period.")
    for name in names:
        period_class(name)
    return tuple(p for p in PERIOD_NAMES if p in names)


class UniqueBitmap(BitmapAsync, Metric):
    """Unique users per hour, day, ISO week and month.

    >>> active = UniqueBitmap("active_users")
    >>> active.mark(42)
    >>> active.count("day")
    >>> (active.between(start, end) & premium.month(2026, 11)).count()
    """

    KIND: ClassVar[str] = KIND
    LABEL: ClassVar[str] = "bitmap"
    objects: ClassVar[catalogue.MetricManager[UniqueBitmap]] = catalogue.MetricManager()

    #: A period is cached in ranges only once it ended this long ago (seconds), so marks stamped
    #: just before its end that reach Redis a little later (batches, clock skew) are never missed.
    CACHE_GRACE: ClassVar[int] = 600

    def __init__(self, name: str, periods: Sequence[str] = DEFAULT_PERIODS) -> None:
        self.name = validate_name(name, "bitmap name")
        self.periods = validate_periods(periods)

    @classmethod
    def from_meta(cls, name: str, meta: Mapping[Any, Any]) -> UniqueBitmap:
        """A bitmap with the periods its stored meta hash names."""
        stored = {to_str(k): to_str(v) for k, v in meta.items()}.get("periods")
        if stored is None:
            raise LookupError(f"Bitmap {name!r} has no stored configuration.")
        names = [p for p in stored.split(",") if p in PERIOD_NAMES]
        return cls(name, periods=names or DEFAULT_PERIODS)

    def _describe(self) -> str:
        return f"periods={self.periods}"

    # Keys

    def key(self, period: Period) -> str:
        """The bitmap of one period, e.g. ``metrics:bitmap:{active}:week:2020-W53``."""
        return metric_key(KIND, self.name, period.name, period.suffix)

    @property
    def gen_key(self) -> str:
        """The generation of cached unions: changed (never deleted; it expires after the cache
        TTL) by ``delete``, by the cleaner and by a mark into a period that is over."""
        return metric_key(KIND, self.name, "gen")

    def index_key(self, period_name: str) -> str:
        """The sorted set of this bitmap's periods of one kind, scored by their start."""
        return metric_key(KIND, self.name, "index", period_name)

    def _period(self, period: str | Period, when: When = None) -> Period:
        if isinstance(period, Period):
            chosen: Period = period
        else:
            chosen = period_class(period).containing(when)
        if chosen.name not in self.periods:
            raise ValueError(
                f"Bitmap {self.name!r} keeps no {chosen.name} keys; "
                f"it keeps {', '.join(self.periods)}."
            )
        return chosen

    # Writing

    def mark(
        self,
        user_id: object,
        when: When = None,
        *,
        batch: Batch | None = None,
        defer: bool = False,
    ) -> None:
        """Set ``user_id``'s bit in every configured period holding ``when``: one atomic round
        trip (a first-seen str/UUID id on Redis Cluster costs one more, to map it).

        With ``batch``, the write is queued and sent with the batch's other writes. With
        ``defer=True`` it is checked now and handed to the process's sender, as the
        middleware's writes are: it never waits on Redis nor raises because Redis is away.
        """
        value = normalize_id(user_id)
        timestamp = to_timestamp(when)
        if deferral.check_defer(defer, batch):
            deferral.sink().mark(self, value, timestamp)
            return
        client = get_redis_connection()
        call = drive(self._mark_steps(client, value, timestamp), client)
        if batch is not None:
            batch.add(call)
        else:
            run_calls(client, [call])

    def _mark_steps(
        self, client: AnyRedisClient, value: int | str, timestamp: float
    ) -> Steps[ScriptCall]:
        """The script call marking a checked ``value`` at ``timestamp``, after mapping a new
        str/UUID id or checking the PREFIX's id kind where the script cannot (Redis Cluster)."""
        zone = get_zone()
        periods = [_containing(name, timestamp, zone) for name in self.periods]
        inline = catalogue.inline_catalogue(client)
        mapped: str | None = None
        if isinstance(value, int):
            offset: int | None = value
            if not inline:
                yield from check_int_kind_steps(client)
        else:
            offset = id_cache.get(client, value)
            if offset is None:
                if inline:
                    mapped = value
                else:
                    offset = (yield from resolve_ids_steps(client, [value], assign=True))[0]
        base = metric_key(KIND, self.name)  # the prefix is read once per mark, not per key
        keys = [
            f"{base}:meta",
            f"{base}:gen",
            *(f"{base}:{p.name}:{p.suffix}" for p in periods),
            *(f"{base}:index:{p.name}" for p in periods),
        ]
        if inline:  # the script checks the id kind (on the cluster: checked above)
            keys += [catalogue_key(KIND), id_kind_key()]
        if mapped is not None:
            keys += id_map_keys()
        args: list[str | int | float] = [
            self.name,
            len(periods),
            int(inline),
            int(mapped is not None),
            mapped if mapped is not None else int(offset or 0),
            ",".join(self.periods),
            generation_ttl_ms(),
            id_kind(value) if inline else "",
            repr(timestamp),
            MAX_AHEAD,
        ]
        keep = retention()
        for period in periods:
            expires, oldest = period_bounds(period, keep[period.name])
            args += [period.suffix, int(period.start_ts), period.end_ts, expires, int(oldest)]
        kind = id_kind(value)
        return ScriptCall(
            script("bitmap_mark"),
            keys,
            args,
            after=self._after_mark(mapped, kind),
            aafter=self._aafter_mark(mapped, kind),
        )

    def _after_mark(self, mapped: str | None, kind: str) -> Any:
        def after(client: RedisClient, reply: Any) -> None:
            note_marked(client, reply, mapped, kind)
            self._listed(client, reply[0])

        return after

    def delete(self) -> None:
        """Remove every period key of this bitmap and its catalogue entry (in bounded steps)."""
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
        """Distinct users in the ``period`` ("hour", "day", "week", "month") holding ``when``."""
        return drive(self._count_steps(period, when))

    def _count_steps(self, period: str | Period, when: When) -> Steps[int]:
        return int((yield Op("bitcount", self.key(self._period(period, when)))))

    def contains(self, user_id: object, period: str | Period, when: When = None) -> bool:
        """Whether ``user_id`` was marked in the ``period`` holding ``when``."""
        client = get_redis_connection()
        return drive(self._contains_steps(client, user_id, period, when), client)

    def _contains_steps(
        self, client: AnyRedisClient, user_id: object, period: str | Period, when: When
    ) -> Steps[bool]:
        key = self.key(self._period(period, when))
        bits = yield from read_bits_steps(client, normalize_id(user_id), [[key]])
        return bits is not None and bits[0]

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
        days = list(days_between(start, end))
        cover = self._cover(days)
        settled = to_timestamp(None) - self.CACHE_GRACE
        over = tuple(p for p in cover if p.is_over(settled))
        running = tuple(p for p in cover if not p.is_over(settled))
        parts = [
            PeriodUnion(self, chunk, cacheable=cache)
            for chunk, cache in ((over, True), (running, False))
            if chunk
        ]
        query: BitmapQuery = parts[0]
        for part in parts[1:]:
            query = query | part
        return query

    def last(self, days: int, when: When = None) -> BitmapQuery:
        """Users marked in the ``days`` days ending with ``when``'s day (today by default)."""
        days = positive_int(days, "days")
        today = Day.containing(when)
        return self.between(today.shift(-(days - 1)).start_ts, today.start_ts)

    def _cover(self, days: list[Day]) -> list[Period]:
        """The fewest keys whose union is exactly these consecutive days."""
        return cover_days(days, self.periods, f"Bitmap {self.name!r}")

    def cohort(self, period: str = "week", start: When = None, periods: int = 8) -> list[list[int]]:
        """A retention table: row i holds the users of period i, then how many of them were
        marked again 1, 2, ... periods later (up to the last of ``periods`` periods).

        ``start`` is any instant of the first period (default: ``periods - 1`` periods ago).
        A script call per row (per ``MAX_SCRIPT_SOURCES`` keys of a row), each BITOP AND +
        BITCOUNT over a bounded number of keys.
        """
        periods = positive_int(periods, "periods")
        first = (
            self._period(period, start)
            if start is not None
            else self._period(period).shift(-(periods - 1))
        )
        sequence = [first.shift(i) for i in range(periods)]
        client = get_redis_connection()
        rows = []
        step = MAX_SCRIPT_SOURCES - 1
        for i in range(periods):
            head, later = self.key(sequence[i]), [self.key(p) for p in sequence[i + 1 :]]
            temp = temp_key(KIND, self.name, f"cohort:{uuid.uuid4().hex}")
            row: list[int] = []
            for start in range(0, max(len(later), 1), step):
                chunk = later[start : start + step]
                answer = script("bitmap_cohort")(client, [head, *chunk, temp], [TEMP_TTL_MS])
                row += [int(v) for v in answer][1 if row else 0 :]
                if row[0] == 0:
                    row += [0] * (len(later) - len(row) + 1)
                    break
            rows.append(row)
        return rows
