"""Reading an event series: ranges, counts, windowed counts and counts by field, each in
bounded script calls so that no call blocks Redis for long, whatever the range."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from typing import Any, ClassVar

from ..core.connection import get_redis_connection
from ..core.drive import drive
from ..core.keys import to_str
from ..core.retention import ttl_ms
from ..core.scripts import ScriptLibrary
from ..core.steps import Op, Script, Steps
from ..core.timeutil import When
from ..core.validation import positive_int
from .codec import (
    bound,
    decode_event,
    score,
    time_range,
    validate_field_name,
    validate_window,
    window_index,
)
from .keys import SeriesKeys

script = ScriptLibrary(__name__.rpartition(".")[0])
#: Where the next page of a read starts: the last (score, id) read.
Cursor = tuple[str, str]


class SeriesQueries(SeriesKeys):
    """The read side of :class:`~django_redis_metrics.events.model.EventSeries`."""

    #: Events read (or counted) per script call by ``between``, ``latest`` and ``count_by``.
    PAGE: ClassVar[int] = 1000
    #: Windows counted per script call by ``counts``; more windows take more round trips.
    MAX_WINDOWS_PER_CALL: ClassVar[int] = 2000
    #: Most windows one ``counts`` call may ask for (a ValueError above).
    MAX_WINDOWS: ClassVar[int] = 100_000
    #: A ``counts`` call over more windows than this counts them all but caches none.
    MAX_CACHED_WINDOWS_PER_CALL: ClassVar[int] = 10_000
    #: Most windows cached per window size; further windows are counted but not cached.
    MAX_CACHE_ENTRIES: ClassVar[int] = 100_000
    #: Largest window size (seconds) that is cached (its window starts stay exact in Lua).
    MAX_CACHED_WINDOW: ClassVar[int] = 2**31
    #: Values of an indexed field counted per script call (SSCAN COUNT hint).
    VALUES_PER_CALL: ClassVar[int] = 500
    #: Most distinct window sizes a series caches; further sizes are counted uncached.
    MAX_CACHED_SIZES: ClassVar[int] = 16

    index: tuple[str, ...]

    @property
    def retention(self) -> float:
        """Seconds events are kept (the model's)."""
        raise NotImplementedError

    def between(self, start: When, end: When, limit: int | None = None) -> list[dict[str, Any]]:
        """Events with ``start <= timestamp <= end``, oldest first (at most ``limit``)."""
        lo, hi = time_range(start, end)
        return list(self._read(True, lo, hi, limit))

    def earliest(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` oldest events, oldest first."""
        return list(self._read(True, -math.inf, math.inf, positive_int(n, "n")))

    def latest(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` newest events, newest first (as a feed shows them)."""
        return list(self._read(False, -math.inf, math.inf, positive_int(n, "n")))

    def iter_between(self, start: When, end: When) -> Iterator[dict[str, Any]]:
        """Like ``between`` but fetched page by page as you iterate (for large ranges)."""
        lo, hi = time_range(start, end)
        return self._read(True, lo, hi, None)

    def _read(
        self, ascending: bool, lo: float, hi: float, limit: int | None
    ) -> Iterator[dict[str, Any]]:
        left = self._limit(limit)
        client = get_redis_connection()
        cursor: Cursor | None = ("", "")
        while cursor is not None:
            page, cursor, left = drive(self._page_steps(ascending, lo, hi, cursor, left), client)
            yield from page

    @staticmethod
    def _limit(limit: int | None) -> int | None:
        return None if limit is None else positive_int(limit, "limit")  # an IntEnum: an int

    def _page_steps(
        self, ascending: bool, lo: float, hi: float, cursor: Cursor, left: int | None
    ) -> Steps[tuple[list[dict[str, Any]], Cursor | None, int | None]]:
        """One page of ``_read``: its events, the cursor of the next page (``None`` when
        done) and how many events are still wanted."""
        if left is not None and left <= 0:
            return [], None, left
        size = self.PAGE if left is None else min(self.PAGE, left)
        args: list[str | int] = [int(ascending), bound(lo), bound(hi), *cursor, size]
        reply = yield Script(script("events_read"), [self.time_key], [*args, self.key("e", "")])
        page = reply[1:]
        if left is not None:
            left -= len(page)
        done = int(reply[0]) or not page
        after = None if done else (to_str(page[-1][0]), to_str(page[-1][1]))
        return [decode_event(raw) for raw in page], after, left

    def count(self, start: When, end: When) -> int:
        """Events with ``start <= timestamp <= end``: one ZCOUNT, O(log N)."""
        return drive(self._count_steps(start, end))

    def _count_steps(self, start: When, end: When) -> Steps[int]:
        lo, hi = time_range(start, end)
        return int((yield Op("zcount", self.time_key, score(lo), score(hi))))

    def size(self) -> int:
        """How many events the series holds (ZCARD); not ``__len__``, which would make
        ``if series:`` a Redis round trip."""
        return drive(self._size_steps())

    def _size_steps(self) -> Steps[int]:
        return int((yield Op("zcard", self.time_key)))

    def counts(
        self, start: When, end: When, window: int | float, *, cache: bool = True
    ) -> list[int]:
        """Events with ``start <= timestamp <= end`` per ``window``-second window, windows
        aligned to multiples of ``window``; the first and last are clipped to the range, so
        the counts add up to ``count(start, end)``.

        From the window holding ``start`` to the one holding ``end``, at most ``MAX_WINDOWS``
        of them; one script call (one ZCOUNT, O(log N), per window) per
        ``MAX_WINDOWS_PER_CALL`` windows. Closed whole windows of a whole number of seconds are
        cached (by calls over at most ``MAX_CACHED_WINDOWS_PER_CALL`` windows, up to
        ``MAX_CACHE_ENTRIES`` per window size); any event recorded later into a cached window
        (however late or back-dated) drops that window from the cache in the same atomic step.
        A clipped window is always counted, never cached.
        """
        return drive(self._counts_steps(start, end, window, cache))

    def _counts_steps(
        self, start: When, end: When, window: int | float, cache: bool
    ) -> Steps[list[int]]:
        """``counts``' ``events_counts`` script calls, in order, everything validated first."""
        window = validate_window(window)
        lo, hi = time_range(start, end)
        if (hi - lo) / window > self.MAX_WINDOWS:  # also catches windows too small to index
            windows: int | float = (hi - lo) / window
        else:
            first, last = window_index(lo, window), window_index(hi, window)
            windows = last - first + 1
        if windows > self.MAX_WINDOWS:
            raise ValueError(
                f"counts() would return {windows:.0f} windows of {window} s; at most "
                f"{self.MAX_WINDOWS} are allowed per call: use a larger window or a shorter range."
            )
        caching = (
            cache
            and isinstance(window, int)
            and window <= self.MAX_CACHED_WINDOW
            and windows <= self.MAX_CACHED_WINDOWS_PER_CALL
        )
        # window_index puts lo and hi inside their windows exactly as doubles compare, so the
        # first window is whole only when lo is its start, and the last only when no double
        # lies between hi and the next window's start.
        low = "" if lo == first * window else score(lo)
        after = (last + 1) * window
        high = "" if hi >= math.nextafter(float(after), -math.inf) else score(hi)
        now = score(time.time())
        if caching:
            keys = [self.time_key, self.cache_key(int(window)), self.sizes_key]
            head: list[str | int] = [
                int(window),
                now,
                self.MAX_CACHED_SIZES,
                self.MAX_CACHE_ENTRIES,
                ttl_ms(2 * self.retention),
            ]
        else:
            keys = [self.time_key]
            head = ["", now, self.MAX_CACHED_SIZES, self.MAX_CACHE_ENTRIES, 0]
        counts_script = script("events_counts")
        result: list[int] = []
        for k in range(first, last + 1, self.MAX_WINDOWS_PER_CALL):
            stop = min(k + self.MAX_WINDOWS_PER_CALL, last + 1)
            bounds = [score(i * window) for i in range(k, stop + 1)]
            clips = [low if k == first else "", high if stop == last + 1 else ""]
            args: list[str | int] = [*head, *clips, *bounds]
            result += parse_counts((yield Script(counts_script, keys, args)))
        return result

    def count_by(self, field: str, start: When, end: When) -> dict[str, int]:
        """Events per value (its text, see ``encode_value``) of ``field``; events without it
        are not counted. An indexed field costs one ZCOUNT per value seen; any other field is
        counted server-side, ``PAGE`` events per script call, so no call blocks Redis long."""
        return drive(self._count_by_steps(field, start, end))

    def _count_by_steps(self, field: str, start: When, end: When) -> Steps[dict[str, int]]:
        validate_field_name(field)
        lo, hi = time_range(start, end)
        if field in self.index:
            return (yield from self._count_indexed(field, lo, hi))
        return (yield from self._count_plain(field, lo, hi))

    def _count_indexed(self, field: str, lo: float, hi: float) -> Steps[dict[str, int]]:
        counter = script("events_count_index")
        result: dict[str, int] = {}
        cursor = "0"
        prefix = self.key("by", field, "")
        while True:
            reply = yield Script(
                counter,
                [self.values_key(field)],
                [cursor, score(lo), score(hi), prefix, self.VALUES_PER_CALL],
            )
            cursor = to_str(reply[0])
            # SSCAN may return a value twice: keep one count per value, never add them.
            for i in range(1, len(reply), 2):
                result[to_str(reply[i])] = int(reply[i + 1])
            if cursor == "0":
                return result

    def _count_plain(self, field: str, lo: float, hi: float) -> Steps[dict[str, int]]:
        counter = script("events_count_field")
        result: dict[str, int] = {}
        cursor: tuple[str, str] = ("", "")
        while True:
            reply = yield Script(
                counter,
                [self.time_key],
                [score(lo), score(hi), *cursor, self.PAGE, self.key("e", ""), field],
            )
            for i in range(3, len(reply), 2):
                text = to_str(reply[i])
                result[text] = result.get(text, 0) + int(reply[i + 1])
            if int(reply[0]):
                return result
            cursor = (to_str(reply[1]), to_str(reply[2]))

    def exists(self) -> bool:
        return bool(get_redis_connection().exists(self.meta_key))


def parse_counts(reply: Any) -> list[int]:
    """The counts of one ``events_counts`` script call."""
    return [int(c) for c in reply]
