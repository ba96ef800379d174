"""EventSeries: every event kept as a hash, indexed by time and by chosen fields.

One id counter, one hash per event, a sorted set mapping event ids to timestamps, and for each
indexed field one sorted set per value plus a set of the values seen (the key schema is in
``keys.py``). Everything of one series shares the series' hash tag, so every script stays in one
Redis Cluster slot. A record is one atomic round trip; window counts cost one ZCOUNT per window;
cached windows are invalidated by late events; preening deletes the event hashes too.

Bounded cardinality: each indexed field admits at most ``max_values`` distinct values (the
``EVENT_MAX_VALUES`` setting, 1000 by default); an event whose value is new once the field holds
that many is indexed under ``OTHER_VALUE`` instead (its hash keeps the true value). The check
is made inside the record script, so it is atomic and costs no extra round trip.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, Literal, overload

from ..conf import conf
from ..core import catalogue, deferral, transaction
from ..core.aio import get_async_connection
from ..core.base import Metric
from ..core.batch import Batch, ScriptCall, calls_steps, run_calls
from ..core.connection import AnyRedisClient, RedisClient, get_redis_connection
from ..core.drive import adrive, drive
from ..core.keys import catalogue_key, to_str, validate_name
from ..core.retention import MAX_AHEAD
from ..core.retention import validate_retention as _retention_seconds
from ..core.steps import Steps
from ..core.timeutil import When, to_timestamp
from ..core.validation import positive_int, shown
from . import fast
from .codec import bound, score, validate_field_name
from .history import SeriesHistory
from .keys import KIND, OTHER_VALUE
from .prepare import Prepared, RecordHead, prepare, prepared_chunks, validate_max_values
from .queries import script


def validate_retention(retention: object, what: str = "retention") -> float:
    """Seconds events are kept: positive, at most ``core.retention.MAX_RETENTION``."""
    return _retention_seconds(retention, what)


class EventSeries(SeriesHistory, Metric):
    """A named stream of events, each a dict of fields with a timestamp.

    >>> orders = EventSeries("orders", index=["type"])
    >>> orders.record(type="purchase", user=42, total=Decimal("19.90"))
    1
    >>> orders.counts(start, end, window=300)   # per aligned 5-minute window, clipped to the range
    """

    KIND: ClassVar[str] = KIND
    LABEL: ClassVar[str] = "event series"
    objects: ClassVar[catalogue.MetricManager[EventSeries]] = catalogue.MetricManager()

    #: Most fields one event may have (and most indexed fields a series may have).
    MAX_FIELDS: ClassVar[int] = 1000
    #: Most events written by one script call of ``record_many``.
    MAX_EVENTS_PER_CALL: ClassVar[int] = 500
    #: Most fields (of all its events) written by one script call of ``record_many``.
    MAX_FIELDS_PER_CALL: ClassVar[int] = 10_000
    #: Most script calls sent in one pipelined round trip by ``record_many``.
    MAX_CALLS_PER_PIPELINE: ClassVar[int] = 20
    #: Events removed per script call by ``preen``.
    PREEN_BATCH: ClassVar[int] = 500
    #: Largest ``batch_size`` a preen accepts.
    MAX_PREEN_BATCH: ClassVar[int] = 10_000
    #: Cached windows lying wholly before the cutoff removed per preen script call.
    PREEN_CACHE_BATCH: ClassVar[int] = 1000
    #: Expired events a record removes, at least (twice the events it records, if more): the
    #: work retention adds to a write, bounded, and faster than events arrive. 0 leaves
    #: expired events to ``preen`` and ``clean_metrics``.
    PRUNE_PER_WRITE: ClassVar[int] = 100
    #: Longest stored value of a field, in UTF-8 bytes (a hash value past 64 bytes already
    #: makes Redis store the event's hash in its larger hashtable encoding).
    MAX_VALUE_BYTES: ClassVar[int] = 65_536
    #: Longest text of an indexed value, in UTF-8 bytes: it becomes part of a key name, and
    #: each distinct value is a sorted set.
    MAX_INDEXED_VALUE_BYTES: ClassVar[int] = 1024
    #: Whether ``record`` one by one may go as a bare transaction (``fast.py``) on a single
    #: node; ``False`` sends every event through the record script.
    TRANSACTIONS: ClassVar[bool] = True

    def __init__(
        self,
        name: str,
        index: Sequence[str] = (),
        retention: int | float | None = None,
        max_values: int | None = None,
    ) -> None:
        self.name = validate_name(name, "event series name")
        if isinstance(index, str):
            raise TypeError(f"index must be a sequence of field names, not the str {shown(index)}.")
        self.index: tuple[str, ...] = tuple(
            dict.fromkeys(validate_field_name(f, indexed=True) for f in index)
        )
        if len(self.index) > self.MAX_FIELDS:
            raise ValueError(
                f"A series may index at most {self.MAX_FIELDS} fields, not {len(index)}."
            )
        self._retention = None if retention is None else validate_retention(retention)
        self._max_values = None if max_values is None else validate_max_values(max_values)
        self._head: tuple[tuple[Any, ...], RecordHead] | None = None

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

    def _describe(self) -> str:
        return f"index={list(self.index)} retention={self.retention}"

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

    # Writing

    @overload
    def record(
        self,
        when: When = None,
        *,
        batch: None = None,
        defer: Literal[False] = False,
        **fields: Any,
    ) -> int: ...

    @overload
    def record(
        self, when: When = None, *, batch: Batch, defer: Literal[False] = False, **fields: Any
    ) -> None: ...

    @overload
    def record(
        self, when: When = None, *, batch: None = None, defer: Literal[True], **fields: Any
    ) -> None: ...

    def record(
        self, when: When = None, *, batch: Batch | None = None, defer: bool = False, **fields: Any
    ) -> int | None:
        """Record one event and return its id: one atomic script call, one round trip.

        With ``batch``, the write is queued; its id is then in ``batch.results``. With
        ``defer=True`` the event is checked now and handed to the process's sender, as the
        decorators' writes are (no id is returned): it never waits on Redis nor raises because
        Redis is away. ``when``, ``batch`` and ``defer`` cannot be field names.
        """
        if batch is not None and not isinstance(batch, Batch):
            raise TypeError(f"batch must be a Batch, not {type(batch).__name__}: {shown(batch)}.")
        deferred = deferral.check_defer(defer, batch)
        event = prepare(self, when, fields)
        if deferred:
            deferral.sink().write(self.name, lambda later: self._add_recorded(later, event))
            return None
        client = get_redis_connection()
        if batch is None and self.TRANSACTIONS and transaction.supports(client):
            return fast.record(self, client, event)  # type: ignore[arg-type]
        call = self._record_call([event], client)
        if batch is not None:
            batch.add(call)
            return None
        first: int = run_calls(client, [call])[0]
        return first

    async def arecord(self, when: When = None, **fields: Any) -> int:
        """``record`` awaited: one atomic round trip; returns the event's id. (For a write that
        never waits on Redis, ``record(defer=True)`` suits async views as well.)"""
        for name in ("batch", "defer"):  # no field names: options of record() only
            if name in fields:
                raise TypeError(
                    f"arecord() takes no {name!r}: use record({name}=...), which never waits "
                    "on Redis when deferred."
                )
        client = get_async_connection()
        return await adrive(self._record_steps(client, when, fields), client)

    def _record_steps(
        self, client: AnyRedisClient, when: When, fields: Mapping[str, Any]
    ) -> Steps[int]:
        event = prepare(self, when, fields)
        first: int = (yield from calls_steps([self._record_call([event], client)]))[0]
        return first

    async def arecord_many(self, events: Iterable[Mapping[str, Any]]) -> list[int]:
        """``record_many`` awaited: everything validated first; the new ids in input order."""
        chunks = prepared_chunks(self, events)
        client = get_async_connection()
        return await adrive(self._record_many_steps(chunks, client), client)

    def record_many(self, events: Iterable[Mapping[str, Any]]) -> list[int]:
        """Record many events (mappings of fields, each with an optional ``"when"``); for imports.

        Everything is validated (and encoded) before anything is written. Each script call is
        atomic and writes at most ``MAX_EVENTS_PER_CALL`` events and ``MAX_FIELDS_PER_CALL``
        fields; up to ``MAX_CALLS_PER_PIPELINE`` calls share one round trip. Returns the new
        ids in input order.
        """
        chunks = prepared_chunks(self, events)
        client = get_redis_connection()
        return drive(self._record_many_steps(chunks, client), client)

    def _record_many_steps(
        self, chunks: list[list[Prepared]], client: AnyRedisClient
    ) -> Steps[list[int]]:
        ids: list[int] = []
        for i in range(0, len(chunks), self.MAX_CALLS_PER_PIPELINE):
            group = chunks[i : i + self.MAX_CALLS_PER_PIPELINE]
            calls = [self._record_call(chunk, client) for chunk in group]
            for chunk, first in zip(group, (yield from calls_steps(calls)), strict=True):
                ids.extend(range(first, first + len(chunk)))
        return ids

    def _add_recorded(self, batch: Batch, event: Prepared) -> None:
        """Add an event checked earlier (a deferred ``record``) to ``batch``."""
        batch.add(self._record_call([event], get_redis_connection()))

    def _record_call(
        self,
        events: Sequence[Prepared],
        client: AnyRedisClient,
        reserve: int = 0,
        seen: Callable[[Any], None] | None = None,
    ) -> ScriptCall:
        """The script call recording ``events``; ``reserve`` more ids taken for the fast path's
        transactions, whose state ``seen`` learns from the reply (``fast.py``)."""
        inline = catalogue.inline_catalogue(client)
        head = self._record_head(inline)
        keys: list[str] = [*head.keys]
        positions: dict[tuple[str, str], int] = {}
        args: list[str | int | bytes] = [
            *head.args,
            self.PRUNE_PER_WRITE and max(self.PRUNE_PER_WRITE, 2 * (len(events) + reserve)),
            *head.tail,
            reserve,
            len(events),
        ]
        for at, flat, entries in events:
            args += [at, len(flat) // 2, *flat, len(entries)]
            for entry in entries:
                position = positions.get(entry)
                if position is None:
                    position = positions[entry] = len(keys) + 1
                    field_keys = head.fields[entry[0]]
                    keys += [f"{field_keys[0]}{entry[1]}", field_keys[1], field_keys[2]]
                args += [position, entry[1]]
        if inline:
            keys.append(head.catalogue)
        then = self._recorded_steps if seen is None else partial(self._recorded_steps, seen=seen)
        return ScriptCall(script("events_record"), keys, args, then)

    def _record_head(self, inline: bool) -> RecordHead:
        """What every record call of this series sends whatever its events (keys, settings),
        built once per configuration: a write reads three settings instead of a dozen key
        names' worth (in one read of the setting), and builds no key it built before
        (``record`` is one by one hot)."""
        now = conf.snapshot()
        retention = self._retention
        if retention is None:
            retention = validate_retention(now.EVENT_RETENTION, "EVENT_RETENTION")
        cap = self._max_values
        if cap is None:
            cap = validate_max_values(now.EVENT_MAX_VALUES, "EVENT_MAX_VALUES")
        config = (now.PREFIX, self.name, self.index, inline, retention, cap)
        cached = self._head
        if cached is not None and cached[0] == config:
            return cached[1]
        own_retention = "" if self._retention is None else score(self._retention)
        own_cap = "" if self._max_values is None else self._max_values
        base = self.key()
        head = RecordHead(
            keys=(f"{base}:seq", f"{base}:time", f"{base}:meta", f"{base}:cachesizes"),
            args=(
                f"{base}:e:",
                f"{base}:cache:",
                self.name,
                int(inline),
                own_retention,
                own_cap,
                config[5],
                OTHER_VALUE,
                score(config[4]),
                MAX_AHEAD,
            ),
            tail=(f"{base}:values:", f"{base}:by:", len(self.index), *self.index),
            fields={
                field: (
                    f"{base}:by:{field}:",
                    f"{base}:values:{field}",
                    f"{base}:by:{field}:{OTHER_VALUE}",
                )
                for field in self.index
            },
            catalogue=catalogue_key(KIND),
        )
        self._head = (config, head)
        return head

    def _recorded_steps(self, reply: Any, seen: Callable[[Any], None] | None = None) -> Steps[int]:
        """A record's follow-up: the series listed if its script says so (on a cluster); the
        result is the first new event's id."""
        if seen is not None:
            seen(reply)
        yield from self._listing_steps(reply[1])
        return int(reply[0])

    # Retention

    def preen(self, now: When = None, *, batch_size: int | None = None) -> int:
        """Remove every event older than ``retention`` before ``now``, with its hash, index
        entries and the cached windows holding it; ``batch_size`` events per script call.
        Returns the number of events removed."""
        cutoff = to_timestamp(now, "now") - self.retention
        return self.preen_before(cutoff, batch_size=batch_size)

    def delete(self) -> None:
        """Remove the whole series and its catalogue entry.

        Events are removed in bounded batches; the script call that removes the last of them
        also removes every other key of the series (id counter included, so ids start again
        at 1) in the same atomic step, so an event recorded meanwhile is either removed with
        the series or starts a new one, never half of each."""
        client = get_redis_connection()
        fast.forget(self)
        self.preen_before(math.inf, client=client, drop=True)
        catalogue.unregister(client, KIND, self.name, self.meta_key)

    def preen_before(
        self,
        cutoff: float,
        *,
        client: RedisClient | None = None,
        batch_size: int | None = None,
        drop: bool = False,
    ) -> int:
        """Remove the events timestamped before ``cutoff``, batch by batch, and the cached
        windows wholly before it. With ``drop``, go on until one call finds the series empty
        and removes all its keys. Returns the number of events removed."""
        size = self.PREEN_BATCH if batch_size is None else batch_size
        batch_size = positive_int(size, "batch_size")
        if batch_size > self.MAX_PREEN_BATCH:
            raise ValueError(
                f"batch_size must be at most {self.MAX_PREEN_BATCH}, not {batch_size}."
            )
        client = client or get_redis_connection()
        call = self.preen_call(cutoff, batch_size, drop=drop)
        removed = 0
        while True:
            done, pending, dropped = (int(x) for x in call.script(client, call.keys, call.args))
            removed += done
            if dropped or (not drop and done < batch_size and not pending):
                return removed

    def preen_call(self, cutoff: float, batch_size: int, *, drop: bool = False) -> ScriptCall:
        """One ``events_preen.lua`` call: at most ``batch_size`` events before ``cutoff`` (and
        ``PREEN_CACHE_BATCH`` cached windows) removed; its reply is (removed, 1 if old cached
        windows remain, 1 if the series was dropped). For pipelining many series' preens."""
        keys = [self.time_key, self.meta_key, self.sizes_key, self.key("seq")]
        args: list[str | int] = [
            bound(cutoff),
            batch_size,
            self.key("e", ""),
            self.key("by", ""),
            self.key("values", ""),
            self.key("cache", ""),
            self.PREEN_CACHE_BATCH,
            int(drop),
            OTHER_VALUE,
        ]
        return ScriptCall(script("events_preen"), keys, args)
