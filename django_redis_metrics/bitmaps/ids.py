"""User ids as bit offsets: an int id is its own offset; str and UUID ids are mapped to
offsets 0, 1, 2... by an atomic script, shared by every bitmap of a PREFIX and cached per process.

Integer and mapped ids would collide (mapped offsets start at 0), so a PREFIX holds one kind,
recorded by the first mark and checked by every later one.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Sequence

from ..conf import conf
from ..core.connection import AnyRedisClient, RedisClient, is_cluster
from ..core.drive import drive
from ..core.keys import metric_key, to_str
from ..core.scripts import ScriptLibrary
from ..core.sentinel import identity as sentinel_identity
from ..core.steps import Op, Pipe, Script, Steps
from ..core.validation import shown

script = ScriptLibrary(__name__.rpartition(".")[0])

#: Kind and name of the id mapping's keys: one mapping per PREFIX, shared by every bitmap.
ID_KIND = "bitmapid"
ID_NAME = "ids"
#: Bit offsets are 32-bit: a bitmap addressing offset 2**32 - 1 takes 512 MB. Integer ids are
#: bounded further by the ``MAX_USER_ID`` setting.
MAX_OFFSET = 2**32 - 1


def bitmap_size(highest: int) -> str:
    """How much one period's bitmap takes when ``highest`` is its highest offset."""
    size = (highest // 8 + 1) / 2**20
    return f"{size:,.0f} MB" if size >= 1 else f"{size * 1024:,.0f} KB"


def validate_max_user_id(value: object) -> int:
    """``MAX_USER_ID``: an int in ``[0, 2**32 - 1]``, the highest integer user id."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"must be an int, not {shown(value)}.")
    if not 0 <= value <= MAX_OFFSET:
        raise ValueError(f"must be in [0, 2**32 - 1], not {value}.")
    return int(value)


MAX_ID_LENGTH = 512
#: Assigned ids kept in process (assignments never change), per connection and prefix.
ID_CACHE_SIZE = 100_000


class _IdCache:
    """Offsets assigned to non-integer ids, bounded, shared by the threads of a process."""

    def __init__(self, size: int = ID_CACHE_SIZE) -> None:
        self.size = size
        self._data: OrderedDict[tuple[str, str, str], int] = OrderedDict()
        self._kinds: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _scope(client: AnyRedisClient, prefix: str | None = None) -> tuple[str, str]:
        return server_identity(client), conf.PREFIX if prefix is None else prefix

    def get(self, client: AnyRedisClient, user_id: str) -> int | None:
        with self._lock:
            return self._data.get((*self._scope(client), user_id))

    def put(self, client: AnyRedisClient, user_id: str, offset: int) -> None:
        with self._lock:
            self._data[(*self._scope(client), user_id)] = offset
            while len(self._data) > self.size:
                self._data.popitem(last=False)

    def holds(self, client: AnyRedisClient, kind: str, prefix: str | None = None) -> bool:
        """Whether this server's PREFIX (``prefix`` when given) is known to hold ids of
        ``kind`` ("int", "mapped"): a mark of this process saw it recorded, so later marks
        need not check it."""
        return self._kinds.get(self._scope(client, prefix)) == kind

    def holds_in(self, server: str, prefix: str, kind: str) -> bool:
        """:meth:`holds` for a known server identity and prefix (the hot path of a mark)."""
        return self._kinds.get((server, prefix)) == kind

    def set_holds(self, client: AnyRedisClient, kind: str) -> None:
        with self._lock:
            self._kinds[self._scope(client)] = kind

    def holds_ints(self, client: AnyRedisClient) -> bool:
        """Whether this server's PREFIX is known to hold integer ids (checked on the cluster)."""
        return self.holds(client, "int")

    def set_holds_ints(self, client: AnyRedisClient) -> None:
        self.set_holds(client, "int")

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._kinds.clear()

    def _after_fork_in_child(self) -> None:
        # Another thread of the parent (the sender, preparing a mark) may have held it.
        self._lock = threading.Lock()


#: Each client's server identity and whether it is a cluster client, found once per client
#: (``isinstance`` of a cluster client is slow: typing's protocol check).
_facts: weakref.WeakKeyDictionary[AnyRedisClient, tuple[str, bool]] = weakref.WeakKeyDictionary()


def client_facts(client: AnyRedisClient) -> tuple[str, bool]:
    """``(server_identity(client), is_cluster(client))``, cached per client."""
    try:
        return _facts[client]
    except (KeyError, TypeError):
        facts = _identity(client), is_cluster(client)
    with contextlib.suppress(TypeError):  # a client that takes no weak reference
        _facts[client] = facts
    return facts


def server_identity(client: AnyRedisClient) -> str:
    """The server a client talks to (host, port, db or socket; a cluster's seed nodes), not the
    setting that named it: a ``CACHES`` alias whose ``LOCATION`` changes is another server."""
    return client_facts(client)[0]


def _identity(client: AnyRedisClient) -> str:
    if is_cluster(client):
        nodes = client.nodes_manager.startup_nodes  # type: ignore[union-attr]
        return "cluster:" + ",".join(sorted(nodes))
    pool = client.connection_pool  # type: ignore[union-attr]
    kwargs = pool.connection_kwargs
    where = (
        sentinel_identity(pool)
        or kwargs.get("path")
        or f"{kwargs.get('host')}:{kwargs.get('port')}"
    )
    return f"{where}/{kwargs.get('db', 0)}"


id_cache = _IdCache()
os.register_at_fork(after_in_child=id_cache._after_fork_in_child)


def normalize_id(user_id: object, highest: int | None = None) -> int | str:
    """An int bit offset (an ``IntEnum`` as a plain int), or the string to map for a UUID/str
    id; clear errors otherwise. ``highest``: ``MAX_USER_ID`` when the caller read it already."""
    if isinstance(user_id, bool):
        raise TypeError(f"A user id must be an int, str or UUID, not a bool ({shown(user_id)}).")
    if isinstance(user_id, int):
        if highest is None:
            highest = conf.MAX_USER_ID
        if not 0 <= user_id <= highest:
            raise ValueError(
                f"An integer user id is a bit offset and must be in [0, {highest}] "
                f"(MAX_USER_ID), not {int(user_id)}: a bitmap takes one bit per id up to the "
                f"highest, {bitmap_size(highest)} per period at this bound. Raise "
                "DJANGO_REDIS_METRICS['MAX_USER_ID'] (at most 2**32 - 1), or pass ids as str "
                "to have them mapped to dense offsets."
            )
        return int(user_id)
    if isinstance(user_id, uuid.UUID):
        return str(user_id)
    if isinstance(user_id, str):
        if not user_id or len(user_id) > MAX_ID_LENGTH:
            raise ValueError(
                f"A str user id must have 1 to {MAX_ID_LENGTH} characters, not {len(user_id)}."
            )
        # A plain str: a subclass (Django's SafeString, an enum's str member) may hash, compare
        # or encode otherwise, and the id cache and the batch's replies are keyed by it.
        return str.__str__(user_id)
    raise TypeError(
        f"A user id must be an int, str or UUID, not {type(user_id).__name__}: {shown(user_id)}."
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
    drive(check_int_kind_steps(client), client)


def check_int_kind_steps(client: AnyRedisClient) -> Steps[None]:
    if id_cache.holds_ints(client):
        return
    replies = yield Pipe([Op("setnx", id_kind_key(), "int"), Op("get", id_kind_key())])
    stored = replies[1]
    if to_str(stored) != "int":
        raise mixed_ids_error(stored, "int")
    id_cache.set_holds_ints(client)


def resolve_ids(client: RedisClient, ids: Sequence[str], *, assign: bool) -> list[int | None]:
    """Offsets of mapped ids (from the cache, else one script call); ``None`` if unknown."""
    return drive(resolve_ids_steps(client, ids, assign=assign), client)


def resolve_ids_steps(
    client: AnyRedisClient, ids: Sequence[str], *, assign: bool
) -> Steps[list[int | None]]:
    offsets: list[int | None] = [id_cache.get(client, i) for i in ids]
    missing = [i for i, offset in zip(ids, offsets, strict=True) if offset is None]
    if missing:
        answer = yield Script(
            script("bitmap_ids"),
            [*id_map_keys(), id_kind_key()],
            ["1" if assign else "0", *missing],
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
    return drive(read_bits_steps(client, normalize_id(user_id), groups), client)


def read_bits_steps(
    client: AnyRedisClient, value: int | str, groups: list[list[str]]
) -> Steps[list[bool] | None]:
    """:func:`read_bits` of a normalized id, as steps."""
    if isinstance(value, int):
        offset = value
    else:
        found = (yield from resolve_ids_steps(client, [value], assign=False))[0]
        if found is None:
            return None
        offset = found
    ops = [Op("getbit", key, offset) for group in groups for key in group]
    if isinstance(value, int):
        ops.append(Op("get", id_kind_key()))
    replies = iter((yield Pipe(ops)))
    bits = [any([bool(next(replies)) for _ in group]) for group in groups]
    if isinstance(value, int) and to_str(next(replies) or b"") == "mapped":
        return None
    return bits
