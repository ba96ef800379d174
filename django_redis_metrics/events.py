"""EventSeries: every event kept as a hash, indexed by time and by chosen fields.

The data model of seeds 000 and 003: one id counter, one hash per event, a sorted set mapping
event ids to timestamps, and for each indexed field one sorted set per value (the whitepaper's
``events:{type}``) plus a set of the values seen. Everything of one series shares the series'
hash tag, so every script stays in one Redis Cluster slot. Fixed from the seeds: a record is one
atomic round trip, window counts cost one ZCOUNT per window instead of a walk over every event,
cached windows are invalidated by late events, and preening deletes the event hashes too.

Keys (``<p>`` = ``<PREFIX>:events:{<name>}``)::

    <p>:seq                  id counter
    <p>:time                 sorted set, id -> timestamp
    <p>:e:<id>               hash of one event, field -> tagged value
    <p>:by:<field>:<value>   sorted set, id -> timestamp, per indexed field and value
    <p>:values:<field>       set of the values seen of an indexed field
    <p>:cache:<window>       sorted set, window start -> "start:count" (closed windows only)
    <p>:cachesizes           set of the window sizes cached
    <p>:meta                 hash: retention, max_values, "i:<field>" per indexed field
                             (catalogue marker)

Bounded cardinality: each indexed field admits at most ``max_values`` distinct values (the
``EVENT_MAX_VALUES`` setting, 1000 by default); an event whose value is new once the field holds
that many is indexed under ``OTHER_VALUE`` instead (its hash keeps the true value). The check
is made inside the record script, so it is atomic and costs no extra round trip.
"""

from __future__ import annotations

import math
import time
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any, ClassVar, overload

from . import catalogue
from .batch import Batch, ScriptCall, run_calls
from .conf import conf
from .connection import RedisClient, get_redis_connection
from .keys import catalogue_key, metric_key, to_str, validate_name
from .scripts import script
from .timeutil import When, to_timestamp

KIND = "events"
#: Field names an event may not use: ``id`` and ``timestamp`` name what every returned event
#: holds; ``when`` and ``batch`` are ``record``'s own arguments (``record_many`` reads ``when``).
RESERVED_FIELDS = frozenset({"id", "timestamp", "when", "batch"})
MAX_FIELD_LENGTH = 200
#: Most fields one event may have (and most indexed fields a series may have).
MAX_FIELDS = 1000
#: Most events written by one script call of ``record_many``.
MAX_EVENTS_PER_CALL = 500
#: Most fields (of all its events) written by one script call of ``record_many``.
MAX_FIELDS_PER_CALL = 10_000
#: Most script calls sent in one pipelined round trip by ``record_many``.
MAX_CALLS_PER_PIPELINE = 20
#: Events read (or counted) per script call by ``between``, ``latest`` and ``count_by``.
PAGE = 1000
#: Windows counted per script call by ``counts``; more windows take more round trips.
MAX_WINDOWS_PER_CALL = 2000
#: Most windows one ``counts`` call may ask for (a ValueError above).
MAX_WINDOWS = 100_000
#: A ``counts`` call over more windows than this counts them all but caches none.
MAX_CACHED_WINDOWS_PER_CALL = 10_000
#: Most windows cached per window size; further windows are counted but not cached.
MAX_CACHE_ENTRIES = 100_000
#: Largest window size (seconds) that is cached (its window starts stay exact in Lua).
MAX_CACHED_WINDOW = 2**31
#: Values of an indexed field counted per script call (SSCAN COUNT hint).
VALUES_PER_CALL = 500
#: Events removed per script call by ``preen``.
PREEN_BATCH = 500
#: Largest ``batch_size`` a preen accepts.
MAX_PREEN_BATCH = 10_000
#: Cached windows lying wholly before the cutoff removed per preen script call.
PREEN_CACHE_BATCH = 1000
#: Most distinct window sizes a series caches; further sizes are counted uncached.
MAX_CACHED_SIZES = 16
#: The indexed value that stands for every value beyond a field's cap of distinct values.
OTHER_VALUE = "(other)"

Value = str | int | float | bool | date | datetime | Decimal
#: One validated event: (score, UTF-8 field/value pairs, (indexed field, text) pairs).
Prepared = tuple[str, list[bytes], list[tuple[str, str]]]

#: One-letter type tags of stored values: ``<tag>:<text>``.
_DECODERS: dict[str, Any] = {
    "s": str,
    "i": int,
    "f": float,
    "b": lambda text: text == "True",
    "n": Decimal,
    "d": date.fromisoformat,
    "t": datetime.fromisoformat,
}


def encode_value(field: str, value: object) -> tuple[str, str]:
    """``(stored value, text)``: the value tagged with its type, and its untagged text.

    The text is what indexes and ``count_by`` group by: ``str(value)`` for str, int, bool
    and Decimal, ``repr`` for float, ISO 8601 for dates and datetimes.
    """
    if isinstance(value, str):
        tag, text = "s", value
    elif isinstance(value, bool):
        tag, text = "b", str(value)
    elif isinstance(value, int):
        tag, text = "i", str(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"Field {field!r} must be a finite number, not {value!r}.")
        tag, text = "f", repr(value)
    elif isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"Field {field!r} must be a finite number, not {value!r}.")
        tag, text = "n", str(value)
    elif isinstance(value, datetime):
        if value.tzinfo is None or value.utcoffset() is None:
            raise ValueError(
                f"Field {field!r} must be an aware datetime; got the naive {value.isoformat()}."
            )
        tag, text = "t", value.isoformat()
    elif isinstance(value, date):
        tag, text = "d", value.isoformat()
    else:
        raise TypeError(
            f"Field {field!r} must be a str, int, float, bool, Decimal, date or aware datetime, "
            f"not {type(value).__name__}: {value!r}."
        )
    return f"{tag}:{text}", text


def decode_value(stored: bytes | str) -> Value:
    """The Python value of a stored ``<tag>:<text>``; an untagged value comes back as str."""
    raw = to_str(stored)
    decoder = _DECODERS.get(raw[:1]) if raw[1:2] == ":" else None
    if decoder is None:
        return raw
    try:
        value: Value = decoder(raw[2:])
    except ValueError:
        return raw
    return value


def _utf8(text: str, what: str) -> bytes:
    """``text`` encoded as Redis will store it; a clear ValueError if it cannot be (a lone
    surrogate), raised before anything is sent."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"{what} cannot be encoded as UTF-8 ({exc.reason} at position {exc.start}): {text!r}."
        ) from None


def validate_field_name(name: object, *, indexed: bool = False) -> str:
    """A field name: a non-empty str, not reserved, no control characters, valid UTF-8."""
    if not isinstance(name, str):
        raise TypeError(f"Field names must be str, not {type(name).__name__}: {name!r}.")
    if not name:
        raise ValueError("Field names must not be empty.")
    if name in RESERVED_FIELDS:
        raise ValueError(
            f"{name!r} is reserved: every returned event holds 'id' and 'timestamp', and "
            "'when' and 'batch' are record()'s own arguments; rename the field."
        )
    if len(name) > MAX_FIELD_LENGTH:
        raise ValueError(f"Field name {name[:40]!r}... is longer than {MAX_FIELD_LENGTH}.")
    if any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in name):
        raise ValueError(f"Field name {name!r} must not contain control characters.")
    if indexed and ":" in name:
        raise ValueError(f"Indexed field name {name!r} must not contain ':'.")
    _utf8(name, "Field name")
    return name


#: Field names seen valid; validating each event's names again is the costliest step of imports.
_valid_field = lru_cache(maxsize=4096)(validate_field_name)


def validate_retention(retention: object, what: str = "retention") -> float:
    if isinstance(retention, bool) or not isinstance(retention, int | float):
        raise TypeError(f"{what} must be a number of seconds, not {retention!r}.")
    if not math.isfinite(retention) or retention <= 0:
        raise ValueError(f"{what} must be a positive number of seconds, not {retention!r}.")
    return float(retention)


def validate_window(window: object) -> int | float:
    if isinstance(window, bool) or not isinstance(window, int | float):
        raise TypeError(f"window must be a number of seconds, not {window!r}.")
    if not math.isfinite(window) or window <= 0:
        raise ValueError(f"window must be a positive number of seconds, not {window!r}.")
    if isinstance(window, float) and window.is_integer():
        return int(window)
    return window


def window_index(timestamp: float, window: int | float) -> int:
    """``k`` with ``k * window <= timestamp < (k + 1) * window``, exactly (as Lua computes it)."""
    quotient = timestamp / window
    if not math.isfinite(quotient):
        raise ValueError(f"window {window!r} is too small for the time {timestamp!r}.")
    k = math.floor(quotient)
    if k * window > timestamp:
        k -= 1
    elif (k + 1) * window <= timestamp:
        k += 1
    return k


def _score(value: float | int) -> str:
    """A timestamp as Redis parses it back to the very same double."""
    return repr(float(value)) if isinstance(value, float) else str(value)


def _range(start: When, end: When) -> tuple[float, float]:
    lo = to_timestamp(start, "start")
    hi = to_timestamp(end, "end")
    if lo > hi:
        raise ValueError(f"start ({lo}) must not be after end ({hi}).")
    return lo, hi


def validate_max_values(value: object, what: str = "max_values") -> int:
    """A cap of distinct values per indexed field: a positive int."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {value!r}.")
    if value < 1:
        raise ValueError(f"{what} must be at least 1, not {value}.")
    return value


def _positive_int(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be an int, not {value!r}.")
    if value <= 0:
        raise ValueError(f"{what} must be positive, not {value}.")
    return value


class EventSeries:
    """A named stream of events, each a dict of fields with a timestamp.

    >>> orders = EventSeries("orders", index=["type"])
    >>> orders.record(type="purchase", user=42, total=Decimal("19.90"))
    1
    >>> orders.counts(start, end, window=300)   # events per aligned 5-minute window
    """

    KIND: ClassVar[str] = KIND
    LABEL: ClassVar[str] = "event series"
    objects: ClassVar[catalogue.MetricManager[EventSeries]] = catalogue.MetricManager()

    def __init__(
        self,
        name: str,
        index: Sequence[str] = (),
        retention: int | float | None = None,
        max_values: int | None = None,
    ) -> None:
        self.name = validate_name(name, "event series name")
        if isinstance(index, str):
            raise TypeError(f"index must be a sequence of field names, not the str {index!r}.")
        self.index: tuple[str, ...] = tuple(
            dict.fromkeys(validate_field_name(f, indexed=True) for f in index)
        )
        if len(self.index) > MAX_FIELDS:
            raise ValueError(f"A series may index at most {MAX_FIELDS} fields, not {len(index)}.")
        self._retention = None if retention is None else validate_retention(retention)
        self._max_values = None if max_values is None else validate_max_values(max_values)

    @classmethod
    def from_meta(cls, name: str, meta: Mapping[Any, Any]) -> EventSeries:
        """A series configured as its stored meta hash says."""
        fields = {to_str(k): to_str(v) for k, v in meta.items()}
        if "retention" not in fields:
            raise LookupError(f"Event series {name!r} has no stored configuration.")
        index = [key[2:] for key in fields if key.startswith("i:")]
        retention = fields.get("retention") or None
        max_values = fields.get("max_values") or None
        return cls(
            name,
            index=sorted(index),
            retention=float(retention) if retention else None,
            max_values=int(max_values) if max_values else None,
        )

    def __repr__(self) -> str:
        return f"<EventSeries {self.name!r} index={list(self.index)} retention={self.retention}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EventSeries) and other.name == self.name

    def __hash__(self) -> int:
        return hash((KIND, self.name))

    @property
    def retention(self) -> float:
        """Seconds events are kept: this series', else ``EVENT_RETENTION`` (read now)."""
        if self._retention is not None:
            return self._retention
        return validate_retention(conf.EVENT_RETENTION, "EVENT_RETENTION")

    @property
    def max_values(self) -> int:
        """Distinct values indexed per field: this series', else ``EVENT_MAX_VALUES``."""
        if self._max_values is not None:
            return self._max_values
        return validate_max_values(conf.EVENT_MAX_VALUES, "EVENT_MAX_VALUES")

    # Keys

    def key(self, *parts: object) -> str:
        return metric_key(KIND, self.name, *parts)

    @property
    def time_key(self) -> str:
        return self.key("time")

    @property
    def meta_key(self) -> str:
        return self.key("meta")

    @property
    def sizes_key(self) -> str:
        return self.key("cachesizes")

    def event_key(self, event_id: int) -> str:
        return self.key("e", event_id)

    def index_key(self, field: str, text: str) -> str:
        return self.key("by", field, text)

    def values_key(self, field: str) -> str:
        return self.key("values", field)

    def cache_key(self, window: int) -> str:
        return self.key("cache", window)

    # Writing

    @overload
    def record(self, when: When = None, *, batch: None = None, **fields: Any) -> int: ...

    @overload
    def record(self, when: When = None, *, batch: Batch, **fields: Any) -> None: ...

    def record(self, when: When = None, *, batch: Batch | None = None, **fields: Any) -> int | None:
        """Record one event and return its id: one atomic script call, one round trip.

        With ``batch``, the write is queued; its id is then in ``batch.results``.
        """
        if batch is not None and not isinstance(batch, Batch):
            raise TypeError(f"batch must be a Batch, not {type(batch).__name__}: {batch!r}.")
        event = self._prepare(when, fields)
        client = get_redis_connection()
        call = self._record_call([event], client)
        if batch is not None:
            batch.add(call)
            return None
        first: int = run_calls(client, [call])[0]
        return first

    def record_many(self, events: Iterable[Mapping[str, Any]]) -> list[int]:
        """Record many events (mappings of fields, each with an optional ``"when"``); for imports.

        Everything is validated (and encoded) before anything is written. Each script call is
        atomic and writes at most ``MAX_EVENTS_PER_CALL`` events and ``MAX_FIELDS_PER_CALL``
        fields; up to ``MAX_CALLS_PER_PIPELINE`` calls share one round trip. Returns the new
        ids in input order.
        """
        chunks: list[list[Prepared]] = []
        chunk: list[Prepared] = []
        weight = 0
        for item in events:
            if not isinstance(item, Mapping):
                raise TypeError(f"record_many expects mappings of fields, not {item!r}.")
            fields = dict(item)
            when = fields.pop("when", None)
            event = self._prepare(when, fields)
            size = len(event[1]) // 2
            if chunk and (len(chunk) >= MAX_EVENTS_PER_CALL or weight + size > MAX_FIELDS_PER_CALL):
                chunks.append(chunk)
                chunk, weight = [], 0
            chunk.append(event)
            weight += size
        if chunk:
            chunks.append(chunk)
        client = get_redis_connection()
        ids: list[int] = []
        for i in range(0, len(chunks), MAX_CALLS_PER_PIPELINE):
            group = chunks[i : i + MAX_CALLS_PER_PIPELINE]
            calls = [self._record_call(chunk, client) for chunk in group]
            for chunk, first in zip(group, run_calls(client, calls), strict=True):
                ids.extend(range(first, first + len(chunk)))
        return ids

    def _prepare(self, when: When, fields: Mapping[str, Any]) -> Prepared:
        """Validate one event: (score, flat field/value pairs encoded as UTF-8, (indexed field,
        text) pairs). Everything is encoded here, so sending it can no longer fail."""
        if not fields:
            raise ValueError(f"An event of {self.name!r} needs at least one field.")
        if len(fields) > MAX_FIELDS:
            raise ValueError(
                f"An event of {self.name!r} may have at most {MAX_FIELDS} fields, "
                f"not {len(fields)}."
            )
        timestamp = to_timestamp(when)
        flat: list[bytes] = []
        entries: list[tuple[str, str]] = []
        for field, value in fields.items():
            _valid_field(field)
            stored, text = encode_value(field, value)
            flat += [field.encode("utf-8"), _utf8(stored, f"The value of field {field!r}")]
            if field in self.index:
                entries.append((field, text))
        return _score(timestamp), flat, entries

    def _record_call(self, events: Sequence[Prepared], client: RedisClient) -> ScriptCall:
        inline = catalogue.inline_catalogue(client)
        retention = "" if self._retention is None else _score(self._retention)
        own_cap = "" if self._max_values is None else self._max_values
        keys: list[str] = [self.key("seq"), self.time_key, self.meta_key, self.sizes_key]
        positions: dict[tuple[str, str], int] = {}
        args: list[str | int | bytes] = [
            self.key("e", ""),
            self.key("cache", ""),
            self.name,
            int(inline),
            retention,
            own_cap,
            self.max_values,
            OTHER_VALUE,
            len(self.index),
            *self.index,
            len(events),
        ]
        for score, flat, entries in events:
            args += [score, len(flat) // 2, *flat, len(entries)]
            for entry in entries:
                position = positions.get(entry)
                if position is None:
                    position = positions[entry] = len(keys) + 1
                    keys += [
                        self.index_key(*entry),
                        self.values_key(entry[0]),
                        self.index_key(entry[0], OTHER_VALUE),
                    ]
                args += [position, entry[1]]
        if inline:
            keys.append(catalogue_key(KIND))
        return ScriptCall(script("events_record"), keys, args, after=self._after_record)

    def _after_record(self, client: RedisClient, reply: Any) -> int:
        first, unlisted = int(reply[0]), int(reply[1])
        if unlisted and not catalogue.inline_catalogue(client):
            catalogue.confirm_listed(client, KIND, self.name, self.meta_key)
        return first

    # Reading

    def between(self, start: When, end: When, limit: int | None = None) -> list[dict[str, Any]]:
        """Events with ``start <= timestamp <= end``, oldest first (at most ``limit``)."""
        lo, hi = _range(start, end)
        return list(self._read(True, lo, hi, limit))

    def earliest(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` oldest events, oldest first."""
        return list(self._read(True, -math.inf, math.inf, _positive_int(n, "n")))

    def latest(self, n: int) -> list[dict[str, Any]]:
        """The ``n`` newest events, newest first (as a feed shows them)."""
        return list(self._read(False, -math.inf, math.inf, _positive_int(n, "n")))

    def iter_between(self, start: When, end: When) -> Iterator[dict[str, Any]]:
        """Like ``between`` but fetched page by page as you iterate (for large ranges)."""
        lo, hi = _range(start, end)
        return self._read(True, lo, hi, None)

    def _read(
        self, ascending: bool, lo: float, hi: float, limit: int | None
    ) -> Iterator[dict[str, Any]]:
        if limit is not None:
            _positive_int(limit, "limit")
        client = get_redis_connection()
        read = script("events_read")
        cursor: tuple[str, str] = ("", "")
        left = limit
        while left is None or left > 0:
            size = PAGE if left is None else min(PAGE, left)
            args: list[str | int] = [
                int(ascending),
                _bound(lo),
                _bound(hi),
                *cursor,
                size,
                self.key("e", ""),
            ]
            reply = read(client, [self.time_key], args)
            page = reply[1:]
            for raw in page:
                yield _event(raw)
            if left is not None:
                left -= len(page)
            if int(reply[0]) or not page:
                return
            cursor = (to_str(page[-1][0]), to_str(page[-1][1]))

    def count(self, start: When, end: When) -> int:
        """Events with ``start <= timestamp <= end``: one ZCOUNT, O(log N)."""
        lo, hi = _range(start, end)
        return int(get_redis_connection().zcount(self.time_key, _score(lo), _score(hi)))

    def size(self) -> int:
        """How many events the series holds (ZCARD); not ``__len__``, which would make
        ``if series:`` a Redis round trip."""
        return int(get_redis_connection().zcard(self.time_key))

    def counts(
        self, start: When, end: When, window: int | float, *, cache: bool = True
    ) -> list[int]:
        """Events per ``window``-second window, windows aligned to multiples of ``window``.

        From the window holding ``start`` to the one holding ``end``, at most ``MAX_WINDOWS``
        of them; one script call (one ZCOUNT, O(log N), per window) per
        ``MAX_WINDOWS_PER_CALL`` windows. Closed windows of a whole number of seconds are cached
        (by calls over at most ``MAX_CACHED_WINDOWS_PER_CALL`` windows, up to
        ``MAX_CACHE_ENTRIES`` per window size); any event recorded later into a cached window
        (however late or back-dated) drops that window from the cache in the same atomic step.
        """
        window = validate_window(window)
        lo, hi = _range(start, end)
        if (hi - lo) / window > MAX_WINDOWS:  # also catches windows too small to index
            windows: int | float = (hi - lo) / window
        else:
            first, last = window_index(lo, window), window_index(hi, window)
            windows = last - first + 1
        if windows > MAX_WINDOWS:
            raise ValueError(
                f"counts() would return {windows:.0f} windows of {window} s; at most "
                f"{MAX_WINDOWS} are allowed per call: use a larger window or a shorter range."
            )
        caching = (
            cache
            and isinstance(window, int)
            and window <= MAX_CACHED_WINDOW
            and windows <= MAX_CACHED_WINDOWS_PER_CALL
        )
        client = get_redis_connection()
        counts_script = script("events_counts")
        result: list[int] = []
        now = _score(time.time())
        for k in range(first, last + 1, MAX_WINDOWS_PER_CALL):
            stop = min(k + MAX_WINDOWS_PER_CALL, last + 1)
            bounds = [_score(i * window) for i in range(k, stop + 1)]
            if caching:
                keys = [self.time_key, self.cache_key(int(window)), self.sizes_key]
                head: list[str | int] = [int(window), now, MAX_CACHED_SIZES, MAX_CACHE_ENTRIES]
            else:
                keys, head = [self.time_key], ["", now, MAX_CACHED_SIZES, MAX_CACHE_ENTRIES]
            result += [int(c) for c in counts_script(client, keys, [*head, *bounds])]
        return result

    def count_by(self, field: str, start: When, end: When) -> dict[str, int]:
        """Events per value (its text, see ``encode_value``) of ``field``; events without it
        are not counted. An indexed field costs one ZCOUNT per value seen; any other field is
        counted server-side, ``PAGE`` events per script call, so no call blocks Redis long."""
        validate_field_name(field)
        lo, hi = _range(start, end)
        client = get_redis_connection()
        if field in self.index:
            return self._count_indexed(client, field, lo, hi)
        return self._count_plain(client, field, lo, hi)

    def _count_indexed(
        self, client: RedisClient, field: str, lo: float, hi: float
    ) -> dict[str, int]:
        counter = script("events_count_index")
        result: dict[str, int] = {}
        cursor = "0"
        prefix = self.key("by", field, "")
        while True:
            reply = counter(
                client,
                [self.values_key(field)],
                [cursor, _score(lo), _score(hi), prefix, VALUES_PER_CALL],
            )
            cursor = to_str(reply[0])
            # SSCAN may return a value twice: keep one count per value, never add them.
            for i in range(1, len(reply), 2):
                result[to_str(reply[i])] = int(reply[i + 1])
            if cursor == "0":
                return result

    def _count_plain(self, client: RedisClient, field: str, lo: float, hi: float) -> dict[str, int]:
        counter = script("events_count_field")
        result: dict[str, int] = {}
        cursor: tuple[str, str] = ("", "")
        while True:
            reply = counter(
                client,
                [self.time_key],
                [_score(lo), _score(hi), *cursor, PAGE, self.key("e", ""), field],
            )
            for i in range(3, len(reply), 2):
                text = to_str(reply[i])
                result[text] = result.get(text, 0) + int(reply[i + 1])
            if int(reply[0]):
                return result
            cursor = (to_str(reply[1]), to_str(reply[2]))

    def exists(self) -> bool:
        return bool(get_redis_connection().exists(self.meta_key))

    # Retention

    def preen(self, now: When = None, *, batch_size: int = PREEN_BATCH) -> int:
        """Remove every event older than ``retention`` before ``now``, with its hash, index
        entries and the cached windows holding it; ``batch_size`` events per script call.
        Returns the number of events removed."""
        cutoff = to_timestamp(now, "now") - self.retention
        return preen_series(get_redis_connection(), self.name, cutoff, batch_size)

    def delete(self) -> None:
        """Remove the whole series and its catalogue entry.

        Events are removed in bounded batches; the script call that removes the last of them
        also removes every other key of the series (id counter included, so ids start again
        at 1) in the same atomic step, so an event recorded meanwhile is either removed with
        the series or starts a new one, never half of each."""
        client = get_redis_connection()
        preen_series(client, self.name, math.inf, PREEN_BATCH, drop=True)
        catalogue.unregister(client, KIND, self.name, self.meta_key)


def preen_series(
    client: RedisClient, name: str, cutoff: float, batch_size: int, *, drop: bool = False
) -> int:
    """Remove the events of series ``name`` timestamped before ``cutoff``, batch by batch, and
    the cached windows wholly before it. With ``drop``, go on until one call finds the series
    empty and removes all its keys. Returns the number of events removed."""
    batch_size = _positive_int(batch_size, "batch_size")
    if batch_size > MAX_PREEN_BATCH:
        raise ValueError(f"batch_size must be at most {MAX_PREEN_BATCH}, not {batch_size}.")

    def key(*parts: object) -> str:
        return metric_key(KIND, name, *parts)

    preen = script("events_preen")
    keys = [key("time"), key("meta"), key("cachesizes"), key("seq")]
    args: list[str | int] = [
        _bound(cutoff),
        batch_size,
        key("e", ""),
        key("by", ""),
        key("values", ""),
        key("cache", ""),
        PREEN_CACHE_BATCH,
        int(drop),
        OTHER_VALUE,
    ]
    removed = 0
    while True:
        done, pending, dropped = (int(x) for x in preen(client, keys, args))
        removed += done
        if dropped or (not drop and done < batch_size and not pending):
            return removed


def _bound(value: float) -> str:
    if math.isinf(value):
        return "+inf" if value > 0 else "-inf"
    return _score(value)


def _event(raw: Sequence[Any]) -> dict[str, Any]:
    event: dict[str, Any] = {"id": int(raw[0]), "timestamp": float(raw[1])}
    for i in range(2, len(raw), 2):
        event[to_str(raw[i])] = decode_value(raw[i + 1])
    return event


def stored_retention(client: RedisClient, name: str) -> float | None:
    """The retention the series' writers recorded (else ``EVENT_RETENTION``); None if no meta."""
    raw = client.hget(metric_key(KIND, name, "meta"), "retention")
    if raw is None:
        return None
    text = to_str(raw)
    if text:
        return float(text)
    return validate_retention(conf.EVENT_RETENTION, "EVENT_RETENTION")


def expired_count(client: RedisClient, name: str, cutoff: float) -> int:
    """How many events of ``name`` a preen at ``cutoff`` would remove (for dry runs)."""
    return int(client.zcount(metric_key(KIND, name, "time"), "-inf", f"({_bound(cutoff)}"))
