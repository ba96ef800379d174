"""UniqueBitmap: one bit per user per period (Spool's design), counted and combined in Redis.

``mark`` sets the user's bit in the key of every configured period (write-time fan-out, as in
bitmapist), so the count of a day, an ISO week or a month is a single BITCOUNT. Ranges and
combinations are lazy :class:`BitmapQuery` trees evaluated by one Lua script with BITOP and
BITCOUNT/GETBIT: nothing is pulled into Python. A script call reads at most
``MAX_SCRIPT_SOURCES`` source keys; longer unions are built beforehand in bounded steps. A range
is covered by the fewest period keys (whole months, then whole ISO weeks, then days), and the
union of periods that are over is cached under a key with a TTL. Temporary keys are always
written with a TTL in the same script.

On Redis Cluster each bitmap's keys share one hash tag, so a query over one bitmap is one script
in one slot. A query combining bitmaps copies each foreign operand into the first bitmap's slot
(GET + SET PX, or DUMP/RESTORE for a sparse one; always with a TTL) and evaluates there.
"""

from __future__ import annotations

import hashlib
import itertools
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, tzinfo
from typing import Any, ClassVar

from redis.exceptions import ResponseError

from . import catalogue
from .batch import Batch, ScriptCall, run_calls
from .conf import conf
from .connection import RedisClient, get_redis_connection, is_cluster
from .keys import catalogue_key, metric_key, temp_key, to_str, validate_name
from .periods import (
    PERIOD_NAMES,
    Day,
    Month,
    Period,
    Week,
    days_between,
    get_zone,
    period_class,
)
from .scripts import script
from .timeutil import When, to_timestamp

KIND = "bitmap"
#: Kind and name of the id mapping's keys: one mapping per PREFIX, shared by every bitmap.
ID_KIND = "bitmapid"
ID_NAME = "ids"
#: Bit offsets are 32-bit: a bitmap addressing offset 2**32 - 1 takes 512 MB.
MAX_OFFSET = 2**32 - 1
MAX_ID_LENGTH = 512
#: Assigned ids kept in process (assignments never change), per connection and prefix.
ID_CACHE_SIZE = 100_000
#: TTL of temporary BITOP results: they are deleted by the script that makes them, this is a net.
TEMP_TTL_MS = 60_000
#: At most this many source keys per script call ("nothing blocks Redis for long"): a query
#: reading more is built in steps (``bitmap_union.lua``), its longest unions first.
MAX_SCRIPT_SOURCES = 32
#: Builds of a query whose prebuilt cached union went stale before it was read; the last one
#: does not use the cache.
BUILD_ATTEMPTS = 3
#: A period is cached in ranges only once it ended this long ago (seconds), so marks stamped
#: just before its end that reach Redis a little later (batches, clock skew) are never missed.
CACHE_GRACE = 600
DEFAULT_PERIODS = ("day", "week", "month")
OPERATORS = ("AND", "OR", "XOR", "DIFF")


# User ids


class _IdCache:
    """Offsets assigned to non-integer ids, bounded, shared by the threads of a process."""

    def __init__(self, size: int = ID_CACHE_SIZE) -> None:
        self.size = size
        self._data: OrderedDict[tuple[str, str, str], int] = OrderedDict()
        self._int_scopes: set[tuple[str, str]] = set()
        self._lock = threading.Lock()

    @staticmethod
    def _scope(client: RedisClient) -> tuple[str, str]:
        return server_identity(client), conf.PREFIX

    def get(self, client: RedisClient, user_id: str) -> int | None:
        with self._lock:
            return self._data.get((*self._scope(client), user_id))

    def put(self, client: RedisClient, user_id: str, offset: int) -> None:
        with self._lock:
            self._data[(*self._scope(client), user_id)] = offset
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def holds_ints(self, client: RedisClient) -> bool:
        """Whether this server's PREFIX is known to hold integer ids (checked on the cluster)."""
        with self._lock:
            return self._scope(client) in self._int_scopes

    def set_holds_ints(self, client: RedisClient) -> None:
        with self._lock:
            self._int_scopes.add(self._scope(client))

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._int_scopes.clear()


def server_identity(client: RedisClient) -> str:
    """The server a client talks to (host, port, db or socket; a cluster's seed nodes), not the
    setting that named it: a ``CACHES`` alias whose ``LOCATION`` changes is another server."""
    if is_cluster(client):
        nodes = client.nodes_manager.startup_nodes  # type: ignore[union-attr]
        return "cluster:" + ",".join(sorted(nodes))
    kwargs = client.connection_pool.connection_kwargs  # type: ignore[union-attr]
    where = kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}"
    return f"{where}/{kwargs.get('db', 0)}"


id_cache = _IdCache()


def normalize_id(user_id: object) -> int | str:
    """An int bit offset, or the string to map for a UUID/str id; clear errors otherwise."""
    if isinstance(user_id, bool):
        raise TypeError(f"A user id must be an int, str or UUID, not a bool ({user_id!r}).")
    if isinstance(user_id, int):
        if not 0 <= user_id <= MAX_OFFSET:
            raise ValueError(
                f"An integer user id is a bit offset and must be in [0, 2**32), not {user_id}. "
                "Pass larger or negative ids as str to have them mapped."
            )
        return user_id
    if isinstance(user_id, uuid.UUID):
        return str(user_id)
    if isinstance(user_id, str):
        if not user_id or len(user_id) > MAX_ID_LENGTH:
            raise ValueError(
                f"A str user id must have 1 to {MAX_ID_LENGTH} characters, not {len(user_id)}."
            )
        return user_id
    raise TypeError(
        f"A user id must be an int, str or UUID, not {type(user_id).__name__}: {user_id!r}."
    )


def id_map_keys() -> list[str]:
    """The shared mapping hash (id -> offset) and its sequence."""
    return [metric_key(ID_KIND, ID_NAME, "map"), metric_key(ID_KIND, ID_NAME, "seq")]


def id_kind_key() -> str:
    """The kind of user ids the PREFIX holds: "int" or "mapped", set by the first mark."""
    return metric_key(ID_KIND, ID_NAME, "kind")


def id_kind(value: int | str) -> str:
    return "int" if isinstance(value, int) else "mapped"


def mixed_ids_error(stored: bytes | str, attempted: str) -> ValueError:
    """Integer ids and mapped ids (offsets 0, 1, ...) would collide: one kind per PREFIX."""
    names = {"int": "integer user ids (bit offsets)", "mapped": "str/UUID user ids (mapped)"}
    held = to_str(stored)
    return ValueError(
        f"PREFIX {conf.PREFIX!r} holds {names.get(held, held)}; marking {names[attempted]} "
        "would make users collide (mapped offsets start at 0). Use one kind of user id per "
        "PREFIX: pass integer ids as str to have them mapped, or use another PREFIX."
    )


def check_int_kind(client: RedisClient) -> None:
    """Redis Cluster: record (or check) that the PREFIX holds integer ids, once per process.

    The kind key lives in the mapping's slot, out of reach of the mark script.
    """
    if id_cache.holds_ints(client):
        return
    pipe = client.pipeline(transaction=False)
    pipe.setnx(id_kind_key(), "int")
    pipe.get(id_kind_key())
    stored = pipe.execute()[1]
    if to_str(stored) != "int":
        raise mixed_ids_error(stored, "int")
    id_cache.set_holds_ints(client)


def resolve_ids(client: RedisClient, ids: Sequence[str], *, assign: bool) -> list[int | None]:
    """Offsets of mapped ids (from the cache, else one script call); ``None`` if unknown."""
    offsets: list[int | None] = [id_cache.get(client, i) for i in ids]
    missing = [i for i, offset in zip(ids, offsets, strict=True) if offset is None]
    if missing:
        answer = script("bitmap_ids")(
            client, [*id_map_keys(), id_kind_key()], ["1" if assign else "0", *missing]
        )
        if answer and int(answer[0]) == -2:
            raise mixed_ids_error(answer[1], "mapped")
        found = dict(zip(missing, (int(v) for v in answer), strict=True))
        for user_id, offset in found.items():
            if offset >= 0:
                id_cache.put(client, user_id, offset)
        offsets = [
            o if o is not None else (found[i] if found[i] >= 0 else None)
            for i, o in zip(ids, offsets, strict=True)
        ]
    return offsets


def read_bits(client: RedisClient, user_id: object, groups: list[list[str]]) -> list[bool] | None:
    """``user_id``'s bit in each group of keys (the OR within a group): one pipelined round trip
    on a single node (one per node on a cluster), no BITOP. ``None`` when the user cannot have
    been marked: an unmapped str/UUID id, or an int id where the PREFIX holds mapped ids."""
    value = normalize_id(user_id)
    if isinstance(value, int):
        offset = value
    else:
        found = resolve_ids(client, [value], assign=False)[0]
        if found is None:
            return None
        offset = found
    pipe = client.pipeline(transaction=False)
    for group in groups:
        for key in group:
            pipe.getbit(key, offset)
    if isinstance(value, int):
        pipe.get(id_kind_key())
    replies = iter(pipe.execute())
    bits = [any([bool(next(replies)) for _ in group]) for group in groups]
    if isinstance(value, int) and to_str(next(replies) or b"") == "mapped":
        return None
    return bits


# Queries


class BitmapQuery:
    """A lazy set of users: evaluated in Redis by ``count()`` and ``in``, never in Python.

    Combine with ``|`` (union), ``&`` (intersection), ``-`` (difference) and ``^`` (symmetric
    difference), also across different bitmaps.
    """

    def __or__(self, other: BitmapQuery) -> BitmapQuery:
        return _combine("OR", self, other)

    def __and__(self, other: BitmapQuery) -> BitmapQuery:
        return _combine("AND", self, other)

    def __sub__(self, other: BitmapQuery) -> BitmapQuery:
        return _combine("DIFF", self, other)

    def __xor__(self, other: BitmapQuery) -> BitmapQuery:
        return _combine("XOR", self, other)

    def leaves(self) -> list[PeriodUnion]:
        raise NotImplementedError

    def count(self) -> int:
        """How many users are in the set (BITCOUNT of the result)."""
        return int(_evaluate(self, "count"))

    def __contains__(self, user_id: object) -> bool:
        bits = read_bits(get_redis_connection(), user_id, [leaf.keys for leaf in self.leaves()])
        return bits is not None and _member(self, bits)

    def __bool__(self) -> bool:
        raise TypeError("A bitmap query has no truth value; use .count() or `user_id in query`.")


@dataclass(frozen=True, eq=False)
class PeriodUnion(BitmapQuery):
    """The union of some period keys of one bitmap (a period, a range, a cover)."""

    bitmap: UniqueBitmap
    periods: tuple[Period, ...]
    cacheable: bool = False

    def leaves(self) -> list[PeriodUnion]:
        return [self]

    @property
    def keys(self) -> list[str]:
        return [self.bitmap.key(p) for p in self.periods]

    @property
    def cache_key(self) -> str:
        digest = hashlib.sha1("\0".join(self.keys).encode()).hexdigest()[:24]
        return temp_key(KIND, self.bitmap.name, f"cache:{digest}")

    @property
    def stamp_key(self) -> str:
        """The generation the cached union was built under (see ``UniqueBitmap.gen_key``)."""
        return f"{self.cache_key}:gen"

    def __repr__(self) -> str:
        parts = ", ".join(p.key_part for p in self.periods) or "nothing"
        return f"<{self.bitmap.name}: {parts}>"


@dataclass(frozen=True, eq=False)
class Operation(BitmapQuery):
    op: str
    left: BitmapQuery
    right: BitmapQuery

    def leaves(self) -> list[PeriodUnion]:
        return [*self.left.leaves(), *self.right.leaves()]

    def __repr__(self) -> str:
        symbol = {"AND": "&", "OR": "|", "XOR": "^", "DIFF": "-"}[self.op]
        return f"({self.left!r} {symbol} {self.right!r})"


@dataclass(frozen=True, eq=False)
class _Prebuilt(BitmapQuery):
    """A union built beforehand into the temporary ``key``, in steps of bounded size.

    ``state`` is "built", "empty" (no source existed) or "skip" (its cached union was valid,
    nothing was built); ``generation`` is the bitmap's generation the build started under.
    """

    union: PeriodUnion
    key: str
    cached: bool
    generation: str
    state: str

    def leaves(self) -> list[PeriodUnion]:
        return []


@dataclass(frozen=True, eq=False)
class _Copied(BitmapQuery):
    """A foreign operand copied into the evaluating slot (Redis Cluster only)."""

    key: str

    def leaves(self) -> list[PeriodUnion]:
        return []


def _combine(op: str, left: BitmapQuery, right: object) -> BitmapQuery:
    if not isinstance(right, BitmapQuery):
        raise TypeError(f"A bitmap query combines only with another query, not {right!r}.")
    return Operation(op, left, right)


class _Program:
    """Compiles a query tree into the postfix program of ``bitmap_query.lua``."""

    def __init__(self, home: str) -> None:
        self.home = home
        self.keys: list[str] = []
        self.index: dict[str, int] = {}
        self.code: list[str | int] = []
        self.token = uuid.uuid4().hex[:16]
        self.counter = itertools.count()

    def key(self, name: str) -> int:
        if name not in self.index:
            self.keys.append(name)
            self.index[name] = len(self.keys)
        return self.index[name]

    def temp(self) -> int:
        return self.key(temp_key(KIND, self.home, f"{self.token}:{next(self.counter)}"))

    def emit(self, node: BitmapQuery) -> None:
        if isinstance(node, PeriodUnion):
            keys = node.keys
            if len(keys) == 1:
                self.code += ["K", self.key(keys[0])]
                return
            sources = [self.key(k) for k in keys]
            if node.cacheable and conf.BITMAP_CACHE_TTL > 0:
                self.code += [
                    "C",
                    self.key(node.cache_key),
                    self.key(node.stamp_key),
                    self.key(node.bitmap.gen_key),
                    len(keys),
                    *sources,
                ]
            else:
                self.code += ["U", self.temp(), len(keys), *sources]
        elif isinstance(node, _Copied):
            self.code += ["T", self.key(node.key)]
        elif isinstance(node, _Prebuilt):
            if node.cached:
                union = node.union
                self.code += [
                    "S",
                    self.key(union.cache_key),
                    self.key(union.stamp_key),
                    self.key(union.bitmap.gen_key),
                    self.key(node.key),
                    node.generation,
                    node.state,
                ]
            else:
                self.code += ["B", self.key(node.key), int(node.state == "built")]
        elif isinstance(node, Operation):
            self.emit(node.left)
            self.emit(node.right)
            self.code += ["O", node.op, self.temp()]
        else:  # pragma: no cover - every node type is handled above
            raise TypeError(f"Not a bitmap query: {node!r}")


def _run_program(
    client: RedisClient, node: BitmapQuery, home: str, mode: str, offset: int = 0
) -> Any:
    """Evaluate ``node`` with ``bitmap_query.lua``, reading at most ``MAX_SCRIPT_SOURCES``
    source keys per script call: longer unions are built beforehand in bounded steps."""
    cache_ttl = max(conf.BITMAP_CACHE_TTL, 1) * 1000
    for attempt in range(BUILD_ATTEMPTS):
        staged, built = _prebuild(client, node, use_cache=attempt < BUILD_ATTEMPTS - 1)
        program = _Program(home)
        program.emit(staged)
        args = [TEMP_TTL_MS, cache_ttl, mode, offset, *program.code]
        try:
            return script("bitmap_query")(client, program.keys, args)
        except ResponseError as exc:
            if not str(exc).startswith("BITMAPSTALE") or attempt == BUILD_ATTEMPTS - 1:
                raise
            for key in built:  # the script deleted those it reached; these expire anyway
                client.unlink(key)
    raise AssertionError("unreachable")  # pragma: no cover


def _prebuild(
    client: RedisClient, node: BitmapQuery, *, use_cache: bool
) -> tuple[BitmapQuery, list[str]]:
    """Build the longest unions of ``node`` beforehand until the rest reads at most
    ``MAX_SCRIPT_SOURCES`` keys; returns the new tree and the temporary keys built."""
    leaves = node.leaves()
    total = sum(len(leaf.periods) for leaf in leaves)
    chosen: dict[int, PeriodUnion] = {}
    for leaf in sorted(leaves, key=lambda u: len(u.periods), reverse=True):
        if total <= MAX_SCRIPT_SOURCES or len(leaf.periods) < 2:
            break
        if id(leaf) not in chosen:
            chosen[id(leaf)] = leaf
            total -= sum(len(u.periods) - 1 for u in leaves if u is leaf)
    if not chosen:
        return node, []
    built: dict[int, _Prebuilt] = {}

    def replace(n: BitmapQuery) -> BitmapQuery:
        if isinstance(n, Operation):
            return Operation(n.op, replace(n.left), replace(n.right))
        if isinstance(n, PeriodUnion) and id(n) in chosen:
            if id(n) not in built:
                built[id(n)] = _build_union(client, n, use_cache=use_cache)
            return built[id(n)]
        return n

    return replace(node), [b.key for b in built.values()]


def _build_union(client: RedisClient, union: PeriodUnion, *, use_cache: bool) -> _Prebuilt:
    """OR ``union``'s keys into a temporary key (with a TTL), ``MAX_SCRIPT_SOURCES`` keys per
    script call; a cached union that is still valid is not built at all."""
    keys = union.keys
    temp = temp_key(KIND, union.bitmap.name, f"pre:{uuid.uuid4().hex}")
    cached = use_cache and union.cacheable and conf.BITMAP_CACHE_TTL > 0
    generation, present = "", 0
    for step, start in enumerate(range(0, len(keys), MAX_SCRIPT_SOURCES)):
        check = (
            [union.cache_key, union.stamp_key, union.bitmap.gen_key] if cached and not step else []
        )
        answer = script("bitmap_union")(
            client,
            [temp, *check, *keys[start : start + MAX_SCRIPT_SOURCES]],
            [TEMP_TTL_MS, int(step > 0), int(bool(check))],
        )
        if not step:
            generation = to_str(answer[1])
        if int(answer[0]) == 1:
            return _Prebuilt(union, temp, cached, generation, "skip")
        present += int(answer[2])
    return _Prebuilt(union, temp, cached, generation, "built" if present else "empty")


def _evaluate(
    query: BitmapQuery, mode: str, offset: int = 0, *, client: RedisClient | None = None
) -> Any:
    client = client or get_redis_connection()
    leaves = query.leaves()
    home = leaves[0].bitmap.name
    if is_cluster(client) and any(leaf.bitmap.name != home for leaf in leaves):
        copies: list[str] = []
        try:
            local = _localize(client, query, home, copies)
            return _run_program(client, local, home, mode, offset)
        finally:
            if copies:
                for key in copies:
                    client.unlink(key)
    return _run_program(client, query, home, mode, offset)


def _localize(client: RedisClient, node: BitmapQuery, home: str, copies: list[str]) -> BitmapQuery:
    """Replace every operand of another bitmap by a copy in ``home``'s slot (Redis Cluster)."""
    if isinstance(node, Operation):
        return Operation(
            node.op,
            _localize(client, node.left, home, copies),
            _localize(client, node.right, home, copies),
        )
    if not isinstance(node, PeriodUnion) or node.bitmap.name == home:
        return node
    stored = _run_program(client, node, node.bitmap.name, "store")
    target = temp_key(KIND, home, f"copy:{uuid.uuid4().hex}")
    copies.append(target)
    if stored:
        source_key, bits, length = to_str(stored[0]), int(stored[1]), int(stored[2])
        _copy_bitmap(client, source_key, target, sparse=bits * 8 < length)
        if source_key not in node.keys and source_key != node.cache_key:
            client.unlink(source_key)  # the union's temporary result
    return _Copied(target)


def _copy_bitmap(client: RedisClient, source: str, target: str, *, sparse: bool) -> None:
    """Copy ``source`` to ``target`` (another slot) with a TTL, through the client.

    A sparse bitmap (under one set bit per 8 bytes, mostly zero bytes) goes as DUMP/RESTORE,
    whose LZF compression shrinks it many times; a dense one as GET + SET PX, which skips the
    compression attempt and the checksum (about 3x faster at 16 MB).
    """
    if sparse:
        payload = client.dump(source)
        if payload is not None:
            if not isinstance(payload, bytes):
                raise TypeError("Copying a bitmap across slots needs a client returning bytes.")
            client.restore(target, TEMP_TTL_MS, payload, replace=True)
        return
    value = client.get(source)
    if value is not None:
        client.set(target, value, px=TEMP_TTL_MS)


def _member(node: BitmapQuery, bits: list[bool]) -> bool:
    """Evaluate the query tree on one user's leaf bits (consumed left to right)."""
    stream = iter(bits)

    def walk(n: BitmapQuery) -> bool:
        if isinstance(n, PeriodUnion):
            return next(stream)
        if isinstance(n, Operation):
            a, b = walk(n.left), walk(n.right)
            return {"AND": a and b, "OR": a or b, "XOR": a != b, "DIFF": a and not b}[n.op]
        raise TypeError(f"Not a bitmap query: {n!r}")  # pragma: no cover

    return walk(node)


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


# The model


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


class UniqueBitmap:
    """Unique users per hour, day, ISO week and month.

    >>> active = UniqueBitmap("active_users")
    >>> active.mark(42)
    >>> active.count("day")
    >>> (active.between(start, end) & premium.month(2026, 11)).count()
    """

    KIND: ClassVar[str] = KIND
    LABEL: ClassVar[str] = "bitmap"
    objects: ClassVar[catalogue.MetricManager[UniqueBitmap]] = catalogue.MetricManager()

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

    def __repr__(self) -> str:
        return f"<UniqueBitmap {self.name!r} periods={self.periods}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UniqueBitmap) and other.name == self.name

    def __hash__(self) -> int:
        return hash((KIND, self.name))

    # Keys

    def key(self, period: Period) -> str:
        """The bitmap of one period, e.g. ``metrics:bitmap:{active}:week:2020-W53``."""
        return metric_key(KIND, self.name, period.name, period.suffix)

    @property
    def meta_key(self) -> str:
        return metric_key(KIND, self.name, "meta")

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

    def mark(self, user_id: object, when: When = None, *, batch: Batch | None = None) -> None:
        """Set ``user_id``'s bit in every configured period holding ``when``: one atomic round
        trip (a first-seen str/UUID id on Redis Cluster costs one more, to map it).

        With ``batch``, the write is queued and sent with the batch's other writes.
        """
        value = normalize_id(user_id)
        timestamp = to_timestamp(when)
        zone = get_zone()
        periods = [_containing(name, timestamp, zone) for name in self.periods]
        client = get_redis_connection()
        inline = catalogue.inline_catalogue(client)
        mapped: str | None = None
        if isinstance(value, int):
            offset: int | None = value
            if not inline:
                check_int_kind(client)
        else:
            offset = id_cache.get(client, value)
            if offset is None:
                if inline:
                    mapped = value
                else:
                    offset = resolve_ids(client, [value], assign=True)[0]
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
        ]
        for period in periods:
            args += [period.suffix, int(period.start_ts), period.end_ts]
        call = ScriptCall(
            script("bitmap_mark"), keys, args, after=self._after_mark(mapped, id_kind(value))
        )
        if batch is not None:
            batch.add(call)
        else:
            run_calls(client, [call])

    def _after_mark(self, mapped: str | None, kind: str) -> Any:
        def after(client: RedisClient, reply: Any) -> None:
            if int(reply[0]) == -1:
                raise mixed_ids_error(reply[1], kind)
            unlisted, offset = int(reply[0]), int(reply[1])
            if mapped is not None:
                id_cache.put(client, mapped, offset)
            if unlisted and not catalogue.inline_catalogue(client):
                catalogue.confirm_listed(client, KIND, self.name, self.meta_key)

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
        return int(get_redis_connection().bitcount(self.key(self._period(period, when))))

    def contains(self, user_id: object, period: str | Period, when: When = None) -> bool:
        """Whether ``user_id`` was marked in the ``period`` holding ``when``."""
        key = self.key(self._period(period, when))
        bits = read_bits(get_redis_connection(), user_id, [[key]])
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
        settled = to_timestamp(None) - CACHE_GRACE
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
        if isinstance(days, bool) or not isinstance(days, int) or days < 1:
            raise ValueError(f"days must be a positive int, not {days!r}.")
        today = Day.containing(when)
        return self.between(today.shift(-(days - 1)).start_ts, today.start_ts)

    def _cover(self, days: list[Day]) -> list[Period]:
        """The fewest keys whose union is exactly these consecutive days."""
        first, last = days[0].start_ts, days[-1].end_ts
        covered: set[float] = set()
        cover: list[Period] = []
        for coarse in ("month", "week"):
            if coarse not in self.periods:
                continue
            seen: set[float] = set()
            for day in days:
                period = period_class(coarse).containing(day.start_ts, day.tz)
                if period.start_ts in seen or day.start_ts in covered:
                    continue
                seen.add(period.start_ts)
                if period.start_ts >= first and period.end_ts <= last:
                    cover.append(period)
                    covered.update(d.start_ts for d in period.days())
        leftover = [d for d in days if d.start_ts not in covered]
        if leftover and "day" not in self.periods:
            raise ValueError(
                f"Bitmap {self.name!r} keeps no day keys, so it cannot answer a range that is not "
                f"made of whole {' or '.join(self.periods)}s."
            )
        return sorted([*cover, *leftover])

    def cohort(self, period: str = "week", start: When = None, periods: int = 8) -> list[list[int]]:
        """A retention table: row i holds the users of period i, then how many of them were
        marked again 1, 2, ... periods later (up to the last of ``periods`` periods).

        ``start`` is any instant of the first period (default: ``periods - 1`` periods ago).
        A script call per row (per ``MAX_SCRIPT_SOURCES`` keys of a row), each BITOP AND +
        BITCOUNT over a bounded number of keys.
        """
        if isinstance(periods, bool) or not isinstance(periods, int) or periods < 1:
            raise ValueError(f"periods must be a positive int, not {periods!r}.")
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


# Settings and retention


def validate_retention(value: object) -> dict[str, int]:
    """``BITMAP_RETENTION``: period name -> positive number of periods kept."""
    if not isinstance(value, dict):
        raise TypeError(f"must be a dict of period name -> periods kept, not {value!r}.")
    for name, keep in value.items():
        period_class(name)
        if isinstance(keep, bool) or not isinstance(keep, int) or keep < 1:
            raise ValueError(f"{name!r} must keep a positive int number of periods, not {keep!r}.")
    return {str(k): int(v) for k, v in value.items()}


def validate_cache_ttl(value: object) -> int:
    """``BITMAP_CACHE_TTL``: seconds, 0 to disable the cache of past unions."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"must be a non-negative int number of seconds, not {value!r}.")
    return value


def retention_cutoff(period_name: str, keep: int, now: float) -> float:
    """The start of the oldest period kept: ``keep`` periods counting the current one.

    Never after the current period's start, whatever ``keep`` says: the running period is kept.
    """
    current = period_class(period_name).containing(now)
    return current.shift(-(max(keep, 1) - 1)).start_ts


def clean_bitmaps(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = 500,
) -> Any:
    """One pass over every listed bitmap: drop the periods older than ``BITMAP_RETENTION``.

    Old periods are found in each bitmap's per-period index (a sorted set scored by period
    start), never with KEYS, and dropped in batches of ``batch_size``; a bitmap left with no
    period at all is removed from the catalogue. Cheap enough to run on every pass.
    """
    from .cleanup import CleanupReport  # cleanup imports this module to register the cleaner

    try:
        retention = validate_retention(conf.BITMAP_RETENTION)
    except (TypeError, ValueError) as exc:
        # The system check reports this too, but call_command/clean_all/run_loop skip checks.
        raise type(exc)(f"BITMAP_RETENTION: {exc}") from exc
    client = client or get_redis_connection()
    timestamp = to_timestamp(now, "now")
    cutoffs = {p: retention_cutoff(p, retention[p], timestamp) for p in PERIOD_NAMES}
    report = CleanupReport(KIND, dry_run=dry_run)
    for name in catalogue.names(client, KIND):
        report.metrics_checked += 1
        bitmap = UniqueBitmap(name, periods=PERIOD_NAMES)
        for period_name, cutoff in cutoffs.items():
            removed = _drop_before(client, bitmap, period_name, cutoff, dry_run, batch_size)
            report.items_removed += removed
            if removed:
                report.details.append(f"bitmap {name!r}: {removed} {period_name} periods")
        if not dry_run and _retire(client, bitmap):
            report.metrics_removed.append(name)
            report.details.append(f"bitmap {name!r}: empty, removed from the catalogue")
    return report


def _drop_before(
    client: RedisClient,
    bitmap: UniqueBitmap,
    period_name: str,
    cutoff: float,
    dry_run: bool,
    batch_size: int,
) -> int:
    index = bitmap.index_key(period_name)
    if dry_run:
        return int(client.zcount(index, "-inf", f"({cutoff}"))
    removed = 0
    while True:
        found = client.zrangebyscore(index, "-inf", f"({cutoff}", start=0, num=batch_size)
        members = [to_str(m) for m in found]  # type: ignore[arg-type]
        if not members:
            return removed
        keys = [metric_key(KIND, bitmap.name, period_name, m) for m in members]
        script("bitmap_drop")(
            client, [index, bitmap.gen_key, *keys], [generation_ttl_ms(), *members]
        )
        removed += len(members)


def _retire(client: RedisClient, bitmap: UniqueBitmap) -> bool:
    inline = catalogue.inline_catalogue(client)
    keys = [bitmap.meta_key, *(bitmap.index_key(p) for p in PERIOD_NAMES)]
    if inline:
        keys.append(catalogue_key(KIND))
    if int(script("metric_retire")(client, keys, [bitmap.name, int(inline)])) != 1:
        return False
    return inline or catalogue.unregister(client, KIND, bitmap.name, bitmap.meta_key)
