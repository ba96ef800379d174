"""Bitmap queries: lazy sets of users evaluated inside Redis, never in Python.

A query is a tree of :class:`PeriodUnion` leaves (some period keys of one bitmap) joined by
``|``, ``&``, ``-`` and ``^``. It is compiled into the postfix program of ``bitmap_query.lua``,
one script call with BITOP and BITCOUNT/GETBIT. A call reads at most ``MAX_SCRIPT_SOURCES``
source keys; longer unions are built beforehand in bounded steps (``bitmap_union.lua``). The
union of periods that are over may be cached under a key stamped with the bitmap's generation.

On Redis Cluster a query combining bitmaps copies each foreign operand into the first bitmap's
slot (GET + SET PX, or DUMP/RESTORE for a sparse one; always with a TTL) and evaluates there.
A leaf of a bitmap with series (a labelled one) reads their union too (``unite.py``).
"""

from __future__ import annotations

import hashlib
import itertools
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from redis.exceptions import ResponseError

from ..conf import conf
from ..core.aio import get_async_connection
from ..core.base import Metric
from ..core.connection import AnyRedisClient, get_redis_connection, is_cluster
from ..core.drive import adrive, drive
from ..core.keys import temp_key, to_str
from ..core.labels.uniting import with_union
from ..core.periods import Period
from ..core.scripts import STALE, ScriptLibrary, error_code
from ..core.steps import Op, Script, Steps
from ..core.validation import shown
from .archived import aprefetch, stand_ins, with_archived
from .bounds import MAX_SCRIPT_SOURCES as MAX_SCRIPT_SOURCES
from .bounds import TEMP_TTL_MS as TEMP_TTL_MS
from .bounds import validate_cache_ttl as validate_cache_ttl
from .building import build_steps, scratch_keys, union_steps
from .ids import normalize_id, read_bits_steps
from .keys import KIND
from .unite import Bitmap, United, copy_steps, unite_steps

script = ScriptLibrary(__name__.rpartition(".")[0])

#: Builds of a query whose prebuilt cached union went stale before it was read; the last one
#: does not use the cache.
BUILD_ATTEMPTS = 3


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
        client = get_redis_connection()
        return int(drive(evaluate(client, self, "count"), client))

    async def acount(self) -> int:
        """``count`` awaited."""
        await aprefetch(stand_ins(self.leaves()))  # archived periods: the database first
        client = get_async_connection()
        return int(await adrive(evaluate(client, self, "count"), client))

    def __contains__(self, user_id: object) -> bool:
        value, client = normalize_id(user_id), get_redis_connection()
        return drive(contains_steps(client, self, value), client)

    async def acontains(self, user_id: object) -> bool:
        """``user_id in query`` awaited."""
        await aprefetch(stand_ins(self.leaves()))
        value, client = normalize_id(user_id), get_async_connection()
        return await adrive(contains_steps(client, self, value), client)

    def __bool__(self) -> bool:
        raise TypeError("A bitmap query has no truth value; use .count() or `user_id in query`.")


@dataclass(frozen=True, eq=False)
class PeriodUnion(BitmapQuery):
    """The union of some period keys of one bitmap (a period, a range, a cover)."""

    bitmap: Bitmap
    periods: tuple[Period, ...]
    cacheable: bool = False

    def leaves(self) -> list[PeriodUnion]:
        return [self]

    @cached_property
    def keys(self) -> list[str]:
        return self.bitmap.period_keys(self.periods)

    @cached_property
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
        raise TypeError(f"A bitmap query combines only with another query, not {shown(right)}.")
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
        else:
            raise TypeError(f"Not a bitmap query: {shown(node)}")


def _run_program(node: BitmapQuery, home: str, mode: str) -> Steps[Any]:
    """Evaluate ``node`` with ``bitmap_query.lua``, reading at most ``MAX_SCRIPT_SOURCES``
    source keys per script call: longer unions are built beforehand in bounded steps."""
    cache_ttl = max(conf.BITMAP_CACHE_TTL, 1) * 1000
    for attempt in range(BUILD_ATTEMPTS):
        staged, built = yield from _prebuild(node, use_cache=attempt < BUILD_ATTEMPTS - 1)
        program = _Program(home)
        program.emit(staged)
        args = [TEMP_TTL_MS, cache_ttl, mode, 0, *program.code]
        try:
            return (yield Script(script("bitmap_query"), program.keys, args))
        except ResponseError as exc:
            if error_code(exc) != STALE or attempt == BUILD_ATTEMPTS - 1:
                raise
            for key in built:  # the script deleted those it reached; these expire anyway
                yield Op("unlink", key)
    raise AssertionError("unreachable")  # pragma: no cover


def _prebuild(node: BitmapQuery, *, use_cache: bool) -> Steps[tuple[BitmapQuery, list[str]]]:
    """Build the longest unions of ``node`` beforehand until the rest reads at most
    ``MAX_SCRIPT_SOURCES`` keys; returns the new tree and the temporary keys built."""
    leaves = node.leaves()
    total = sum(len(leaf.keys) for leaf in leaves)
    chosen: dict[int, PeriodUnion] = {}
    for leaf in sorted(leaves, key=lambda u: len(u.keys), reverse=True):
        if total <= MAX_SCRIPT_SOURCES or len(leaf.keys) < 2:
            break
        if id(leaf) not in chosen:
            chosen[id(leaf)] = leaf
            total -= sum(len(u.keys) - 1 for u in leaves if u is leaf)
    if not chosen:
        return node, []
    built: dict[int, _Prebuilt] = {}

    def replace(n: BitmapQuery) -> Steps[BitmapQuery]:
        if isinstance(n, Operation):
            return Operation(n.op, (yield from replace(n.left)), (yield from replace(n.right)))
        if isinstance(n, PeriodUnion) and id(n) in chosen:
            if id(n) not in built:
                built[id(n)] = yield from _build_union(n, use_cache=use_cache)
            return built[id(n)]
        return n

    return (yield from replace(node)), [b.key for b in built.values()]


def _build_union(union: PeriodUnion, *, use_cache: bool) -> Steps[_Prebuilt]:
    """OR ``union``'s keys into a temporary key (with a TTL), in bounded steps; a cached union
    that is still valid is not built at all (the union of series is never cached)."""
    temp = temp_key(KIND, union.bitmap.name, f"pre:{uuid.uuid4().hex}")
    if isinstance(union.bitmap, United):
        present = yield from build_steps(union.keys, temp)
        return _Prebuilt(union, temp, False, "", "built" if present else "empty")
    cached = use_cache and union.cacheable and conf.BITMAP_CACHE_TTL > 0
    check = [union.cache_key, union.stamp_key, union.bitmap.gen_key] if cached else []
    generation, state = yield from union_steps(union.keys, temp, check)
    return _Prebuilt(union, temp, cached, generation, state)


def evaluate(
    client: AnyRedisClient, query: BitmapQuery, mode: str, plain: Steps[Any] | None = None
) -> Steps[Any]:
    """Evaluate ``query``, the leaves of a bitmap with series over its series too (listed in
    the first round trip: ``core/labels/uniting.py``); ``plain``: its read when none has series.
    Archived periods' bits are set into temporary keys first (``archived.py``)."""
    united = with_union(
        _families(query),
        plain or _evaluate(client, query, mode),
        lambda found: _evaluate(client, _expand(query, found), mode),
        scratch_keys,
    )
    return (yield from with_archived(stand_ins(query.leaves()), united))


def contains_steps(client: AnyRedisClient, query: BitmapQuery, value: int | str) -> Steps[bool]:
    """Whether the user of normalized id ``value`` is in ``query``: its bit in every leaf's
    keys (the series' too), no BITOP."""

    def bits(node: BitmapQuery) -> Steps[bool]:
        found = yield from read_bits_steps(client, value, [leaf.keys for leaf in node.leaves()])
        return found is not None and _member(node, found)

    found = with_union(_families(query), bits(query), lambda f: bits(_expand(query, f)))
    return (yield from with_archived(stand_ins(query.leaves()), found))


def _families(query: BitmapQuery) -> list[Metric]:
    """The bitmaps of ``query``'s leaves that may have series."""
    return [leaf.bitmap for leaf in query.leaves() if isinstance(leaf.bitmap, Metric)]


def _expand(node: BitmapQuery, found: Sequence[Sequence[Any]]) -> BitmapQuery:
    """``node``, its leaves of a bitmap with series ``found`` read over them too."""
    series = {s[0].family.name: s for s in found if s and s[0].family is not None}

    def expand(n: BitmapQuery) -> BitmapQuery:
        if isinstance(n, Operation):
            return Operation(n.op, expand(n.left), expand(n.right))
        if isinstance(n, PeriodUnion) and n.bitmap.name in series:
            united = United(n.bitmap, (n.bitmap, *series[n.bitmap.name]))
            return PeriodUnion(united, n.periods, cacheable=False)
        return n

    return expand(node)


def _evaluate(client: AnyRedisClient, query: BitmapQuery, mode: str) -> Steps[Any]:
    """Evaluate ``query`` (on Redis Cluster, foreign operands and unions of series copied into
    one slot first)."""
    leaves = query.leaves()
    home = leaves[0].bitmap.name
    if is_cluster(client) and any(
        leaf.bitmap.name != home or isinstance(leaf.bitmap, United) for leaf in leaves
    ):
        copies: list[str] = []
        try:
            local = yield from _localize(query, home, copies)
            return (yield from _run_program(local, home, mode))
        finally:
            for key in copies:
                yield Op("unlink", key)
    return (yield from _run_program(query, home, mode))


def _localize(node: BitmapQuery, home: str, copies: list[str]) -> Steps[BitmapQuery]:
    """Replace every operand of another bitmap by a copy in ``home``'s slot (Redis Cluster)."""
    if isinstance(node, Operation):
        left = yield from _localize(node.left, home, copies)
        return Operation(node.op, left, (yield from _localize(node.right, home, copies)))
    if isinstance(node, PeriodUnion) and isinstance(node.bitmap, United):
        united = temp_key(KIND, home, f"unite:{uuid.uuid4().hex}")
        copies.append(united)
        yield from unite_steps(node.bitmap, node.periods, united)
        return _Copied(united)
    if not isinstance(node, PeriodUnion) or node.bitmap.name == home:
        return node
    stored = yield from _run_program(node, node.bitmap.name, "store")
    target = temp_key(KIND, home, f"copy:{uuid.uuid4().hex}")
    copies.append(target)
    if stored:
        source_key, bits, length = to_str(stored[0]), int(stored[1]), int(stored[2])
        yield from copy_steps(source_key, target, sparse=bits * 8 < length)
        if source_key not in node.keys and source_key != node.cache_key:
            yield Op("unlink", source_key)  # the union's temporary result
    return _Copied(target)


def _member(node: BitmapQuery, bits: list[bool]) -> bool:
    """Evaluate the query tree on one user's leaf bits (consumed left to right)."""
    stream = iter(bits)

    def walk(n: BitmapQuery) -> bool:
        if isinstance(n, PeriodUnion):
            return next(stream)
        if isinstance(n, Operation):
            a, b = walk(n.left), walk(n.right)
            return {"AND": a and b, "OR": a or b, "XOR": a != b, "DIFF": a and not b}[n.op]
        raise TypeError(f"Not a bitmap query: {shown(n)}")

    return walk(node)
