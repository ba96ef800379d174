"""Counter: named counters kept at several precisions, the newest N samples of each.

The data model of Redis in Action 5.2.1: for every precision a hash maps the start of each
epoch-aligned time slice to its count. Each write keeps every precision within its samples
(``counter_incr.lua``; no cleaner needed). A per-counter meta hash remembers each precision's
number of samples and retention state (so the cleaner needs no Python configuration) and the
counter's lifetime total (never trimmed: what a Prometheus counter exposes), and a
catalogue lists the counters.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar

from ..archive.history import HistoryReads
from ..core import catalogue, deferral
from ..core.aio import ConnectionSlot, get_async_connection
from ..core.batch import Batch, ScriptCall, calls_steps, run_calls
from ..core.connection import AnyRedisClient, get_redis_connection
from ..core.drive import adrive, drive
from ..core.keys import catalogue_key, metric_key, to_str
from ..core.labels.admission import aadmitted, admitted
from ..core.labels.aggregate import with_series
from ..core.retention import MAX_AHEAD
from ..core.scripts import ScriptLibrary
from ..core.shards import validate_shards
from ..core.sliced import SlicedMetric
from ..core.steps import Op, Read, Steps, reads_of
from ..core.timeutil import When, slice_start, to_timestamp
from ..core.validation import integer, shown
from . import fast, reading
from .keys import KIND
from .plan import write_plan

script = ScriptLibrary(__name__.rpartition(".")[0])

#: Largest absolute count accepted in one increment; keeps totals far from int64 overflow.
MAX_COUNT = 2**53
#: The meta hash field holding a counter's lifetime total (``counter_incr.lua``).
LIFETIME_FIELD = "t"


def validate_count(count: object) -> int:
    count = integer(count, "count")
    if abs(count) > MAX_COUNT:
        raise ValueError(f"count must be within ±2**53, not {count}.")
    return count


class Counter(HistoryReads, SlicedMetric):
    """A named counter at several precisions.

    >>> hits = Counter("hits")
    >>> hits.incr()
    >>> hits.series(60)          # [(slice start, count), ...] oldest first
    """

    KIND: ClassVar[str] = KIND
    LABEL: ClassVar[str] = "counter"
    PRECISIONS_SETTING: ClassVar[str] = "COUNTER_PRECISIONS"
    SAMPLES_SETTING: ClassVar[str] = "COUNTER_SAMPLES"
    HISTORY_SPEC: ClassVar[str] = "django_redis_metrics.counter.archive.HISTORY"
    objects: ClassVar[catalogue.MetricManager[Counter]] = catalogue.MetricManager()

    #: Most (slice, count) pairs sent in one script call by ``incr_many``.
    MAX_PAIRS_PER_CALL: ClassVar[int] = 5000
    #: Most slices ``recent`` reads.
    MAX_RECENT: ClassVar[int] = 100_000
    #: Slices asked for per HSCAN step or HMGET.
    READ_CHUNK: ClassVar[int] = 1000

    # Sharding (core/shards.py): the constructor's ``shards``; writes pick a shard in
    # ``labels.admission.admitted``, reads add the shards in ``labels.aggregate.with_series``.

    #: Shards the counter's writes spread over (1: unsharded).
    shards: int = 1

    def __init__(
        self,
        name: str,
        precisions: Sequence[int] | None = None,
        samples: int | None = None,
        *,
        labels: Sequence[str] = (),
        max_series: int | None = None,
        shards: int = 1,
    ) -> None:
        """``shards=N`` (1 to ``MAX_SHARDS``, 64) spreads the increments over ``N`` keys on
        ``N`` Redis Cluster slots, a shard picked per write; every read adds them up."""
        super().__init__(name, precisions, samples, labels=labels, max_series=max_series)
        self.shards = validate_shards(shards, self.label_names, f"{self.LABEL} {self.name!r}")

    def __getstate__(self) -> dict[str, Any]:
        """The counter's configuration, for pickling and copies: without its write plan
        (``counter/plan.py``), which holds a client and is made again on the next write."""
        state = dict(self.__dict__)
        state.pop("_write_plan", None)
        return state

    def _describe(self) -> str:
        described = super()._describe()
        return described if self.shards == 1 else f"{described} shards={self.shards}"

    # (end of sharding)

    # Writing

    @admitted
    def incr(
        self, count: int = 1, when: When = None, *, batch: Batch | None = None, defer: bool = False
    ) -> None:
        """Add ``count`` to the slice holding ``when`` at every precision: one atomic round trip.

        With ``batch``, the write is queued and sent with the batch's other writes. With
        ``defer=True`` it is checked now and handed to the process's sender, as the
        middleware's writes are: it never waits on Redis nor raises because Redis is away.
        """
        count, timestamp = self._checked(count, when)
        if deferral.check_defer(defer, batch):
            deferral.sink().incr(self, count, timestamp)
            return
        client = get_redis_connection()
        plan = write_plan(self, client)  # what depends on the settings, worked out once
        if batch is not None:
            plan.queue(batch, self, count, timestamp)
        elif not fast.try_incr(self, client, plan.fact, timestamp, count):
            run_calls(client, [plan.call(self, count, timestamp)])

    @admitted
    def incr_many(self, increments: Iterable[tuple[When, int]]) -> int:
        """Apply many ``(when, count)`` increments, summed per slice first; for imports.

        All input is validated before anything is written. Each script call is atomic and
        carries at most ``MAX_PAIRS_PER_CALL`` slices; returns the number of calls made.
        """
        client = get_redis_connection()
        return drive(self._incr_many_steps(client, increments), client)

    @staticmethod
    def _checked(count: object, when: When) -> tuple[int, float]:
        """An increment's validated count and timestamp (the usual ones checked first)."""
        if type(count) is not int or not -MAX_COUNT <= count <= MAX_COUNT:
            count = validate_count(count)
        if when is None:
            return count, time.time()
        return count, to_timestamp(when)

    def _slices_of(self, count: int, timestamp: float) -> dict[int, dict[int, int]]:
        """The slice of ``timestamp`` at every precision, with ``count``."""
        return {p: {int(timestamp // p) * p: count} for p in self.precisions}

    def _totals(self, increments: Iterable[tuple[When, int]]) -> dict[int, dict[int, int]]:
        """``incr_many``'s increments validated and summed per precision and slice."""
        totals: dict[int, dict[int, int]] = {p: defaultdict(int) for p in self.precisions}
        for item in increments:
            if not isinstance(item, tuple) or len(item) != 2:
                raise TypeError(f"incr_many expects (when, count) pairs, not {shown(item)}.")
            timestamp = to_timestamp(item[0])
            count = validate_count(item[1])
            for precision, slices in totals.items():
                slices[slice_start(timestamp, precision)] += count
        for slices in totals.values():
            for start, total in slices.items():
                if abs(total) > MAX_COUNT:
                    raise ValueError(
                        f"The increments of slice {start} add up to {total}, beyond ±2**53."
                    )
        return totals

    def _incr_calls(
        self, totals: dict[int, dict[int, int]], client: AnyRedisClient
    ) -> list[ScriptCall]:
        """``incr_many``'s script calls, at most ``MAX_PAIRS_PER_CALL`` slices each."""
        finest = min(totals)
        # Each increment lands in exactly one slice of the finest precision: a chunk adds the
        # slices of that precision it carries to the lifetime total, so the chunks add every
        # increment once between them.
        return [
            self._incr_call(chunk, client, sum(chunk.get(finest, {}).values()))
            for chunk in _chunks(totals, self.MAX_PAIRS_PER_CALL)
        ]

    def _incr_call(
        self, slices: dict[int, dict[int, int]], client: AnyRedisClient, total: int
    ) -> ScriptCall:
        """One script call adding ``slices`` (precision -> slice start -> count), and ``total``
        to the lifetime total."""
        inline = catalogue.inline_catalogue(client)
        base = metric_key(KIND, self.name)  # settings are read once per write, not per key
        keys: list[str] = [f"{base}:meta", *(f"{base}:{p}" for p in slices)]
        args: list[str | int] = [self.name, self.samples, int(inline), MAX_AHEAD, total]
        for precision, counts in slices.items():
            args += [precision, len(counts)]
            for start, count in counts.items():
                args += [start, count]
        args.append(max(map(max, slices.values())))  # the latest start, checked first
        if inline:
            keys.append(catalogue_key(KIND))
        return ScriptCall(script("counter_incr"), keys, args, self._listing_steps)

    def _incr_one_call(self, count: int, timestamp: float, client: AnyRedisClient) -> ScriptCall:
        """The script call of one increment, in the script's short form: the latest slice
        start, then the slice start at each precision, in key order (14 arguments for 7
        precisions, where the general form takes 34: building, packing and parsing them is
        much of a call's cost). Its reply lets the next increments of these slices take the
        transaction fast path (``fast.py``)."""
        return write_plan(self, client).call(self, count, timestamp)

    def _incr_many_steps(
        self, client: AnyRedisClient, increments: Iterable[tuple[When, int]]
    ) -> Steps[int]:
        """``incr_many``'s writes, everything checked first, as steps; the number of calls."""
        calls = self._incr_calls(self._totals(increments), client)
        if calls:
            yield from calls_steps(calls)
        return len(calls)

    @aadmitted
    async def aincr(self, count: int = 1, when: When = None) -> None:
        """``incr`` awaited: one atomic round trip, the transaction of ``incr``'s fast path
        where it applies. (``incr(defer=True)`` never waits on Redis either, and suits async
        views as well.)"""
        count, timestamp = self._checked(count, when)
        client = get_async_connection()
        plan = write_plan(self, client)
        async with ConnectionSlot(client):
            if await fast.atry_incr(self, client, plan.fact, timestamp, count):
                return
            call = plan.call(self, count, timestamp)
            await adrive(calls_steps([call]), client)

    @aadmitted
    async def aincr_many(self, increments: Iterable[tuple[When, int]]) -> int:
        """``incr_many`` awaited: everything validated first; returns the number of calls."""
        client = get_async_connection()
        return await adrive(self._incr_many_steps(client, increments), client)

    async def aseries(self, precision: int) -> list[tuple[int, int]]:
        """``series`` awaited."""
        found = await reading.aseries(self, precision)  # one request on a plain client
        return await adrive(self._series_steps(precision)) if found is None else found

    async def arecent(
        self, precision: int, count: int | None = None, until: When = None
    ) -> list[tuple[int, int]]:
        """``recent`` awaited."""
        found = await reading.arecent(self, precision, count, until)
        return await adrive(self._recent_steps(precision, count, until)) if found is None else found

    async def atotal(self, precision: int | None = None) -> int:
        """``total`` awaited."""
        return sum(count for _, count in await self.aseries(self._total_precision(precision)))

    # Reading

    def series(self, precision: int) -> list[tuple[int, int]]:
        """The stored samples of ``precision`` as ``(slice start, count)``, oldest first."""
        found = reading.series(self, precision)  # one request on a plain client
        return drive(self._series_steps(precision)) if found is None else found

    def _series_steps(self, precision: int) -> Steps[list[tuple[int, int]]]:
        """The samples of ``precision``, this counter's and its series' added per slice."""
        self._check_precision(precision)
        return (
            yield from with_series(
                self, lambda m: m._own_series_steps(precision), reading.added_series
            )
        )

    def _own_series_steps(self, precision: int) -> Steps[list[tuple[int, int]]]:
        """The samples of ``precision`` (checked by the caller) in this counter's own keys."""
        key = self.key(precision)
        data: dict[Any, Any] = {}
        if self.samples <= self.READ_CHUNK:
            # Retention at write time keeps the hash within its samples (and the few slices a
            # clock ahead adds): read whole, one pass (HGETALL costs half an HSCAN's work).
            return reading.samples(reading.split((yield Op("hgetall", key))))
        # HSCAN: bounded steps for a hash of many samples.
        cursor = 0
        while True:
            cursor, chunk = yield Op("hscan", key, cursor, count=self.READ_CHUNK)
            data.update(chunk)
            if not int(cursor):
                return reading.samples(reading.split(data))

    def recent(
        self, precision: int, count: int | None = None, until: When = None
    ) -> list[tuple[int, int]]:
        """The newest ``count`` slices (default: ``samples``) up to ``until``, zero-filled."""
        found = reading.recent(self, precision, count, until)  # one request on a plain client
        return drive(self._recent_steps(precision, count, until)) if found is None else found

    def _recent_steps(
        self, precision: int, count: int | None, until: When
    ) -> Steps[list[tuple[int, int]]]:
        return (
            yield from with_series(
                self, lambda m: m._own_recent_steps(precision, count, until), reading.added_recent
            )
        )

    def _own_recent_steps(
        self, precision: int, count: int | None, until: When
    ) -> Steps[list[tuple[int, int]]]:
        samples = self.samples
        if count is None or (type(count) is int and samples >= count > 0):
            wanted = samples if count is None else count
            if samples <= self.READ_CHUNK and 2 * wanted >= samples:
                return (yield from self._recent_whole_steps(precision, wanted, until))
        found = yield from self._recent_steps_of(
            precision, count, until, self.MAX_RECENT, self.READ_CHUNK
        )
        return [(s, int(to_str(v)) if v is not None else 0) for s, v in found]

    def _recent_whole_steps(
        self, precision: int, count: int, until: When
    ) -> Steps[list[tuple[int, int]]]:
        """``recent`` of at least half the window, when the window is small: the hash read
        whole (HGETALL: one pass over a compact hash of at most ``samples`` slices and the few
        a clock ahead adds, where HMGET looks each slice up with a pass of its own)."""
        precision = self._check_precision(precision)
        last = slice_start(to_timestamp(until, "until"), precision)
        stored: dict[Any, Any] = yield Op("hgetall", self.key(precision))
        return reading.window(reading.split(stored), last, precision, count)

    def lifetime_total(self) -> int:
        """The net sum of every count added since the counter was created (0 if none): kept
        apart from the slices, never trimmed, so it only ever changes by what is added (a
        Prometheus counter's value). It goes when the counter goes: ``delete()``, or no write
        for its longest retention (TTL, or a cleaner retiring the emptied counter)."""
        return drive(self._lifetime_total_steps())

    def _lifetime_total_steps(self) -> Steps[int]:
        return (
            yield from with_series(
                self, Counter._own_lifetime_total_steps, lambda own, theirs: own + sum(theirs)
            )
        )

    def _own_lifetime_total_steps(self) -> Steps[int]:
        value = yield Op("hget", self.meta_key, LIFETIME_FIELD)
        return 0 if value is None else int(to_str(value))

    def lifetime_total_reads(self) -> tuple[list[Read], Callable[[Sequence[Any]], int]]:
        """``lifetime_total()`` for a shared pipeline: ``(commands, parse)``, ``commands`` a
        list of ``(redis-py method name, args)`` to queue, ``parse(replies)`` their replies (in
        order) turned into the total. The counter's own total, in one round trip: a labelled
        counter's series are each read by their own ``lifetime_total_reads()``."""
        return reads_of(self._own_lifetime_total_steps)

    def total(self, precision: int | None = None) -> int:
        """The sum of the stored samples of ``precision`` (default: the coarsest)."""
        return sum(count for _, count in self.series(self._total_precision(precision)))

    def _total_precision(self, precision: int | None) -> int:
        return max(self.precisions) if precision is None else precision


def _chunks(totals: dict[int, dict[int, int]], size: int) -> Iterable[dict[int, dict[int, int]]]:
    """Split per-precision slice totals into pieces of at most ``size`` pairs."""
    chunk: dict[int, dict[int, int]] = {}
    used = 0
    for precision, slices in totals.items():
        for start, count in slices.items():
            if used == size:
                yield chunk
                chunk, used = {}, 0
            chunk.setdefault(precision, {})[start] = count
            used += 1
    if chunk:
        yield chunk
