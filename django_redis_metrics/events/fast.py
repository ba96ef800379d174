"""One event recorded as a bare transaction, when this process knows the series' keys are as the
record script left them: ``MULTI``, a dozen C commands, ``EXEC``; no Lua.

``events_record.lua`` does for each event what a transaction cannot (decide an id, check every
key's type, apply the cap of distinct values, prune, refresh TTLs, list the series). A process
that records a series one by one asks the script, with a record, for a few more ids (a block,
doubling up to :data:`MAX_BLOCK` while it is used up); the script's reply also tells the Redis
clock, the cached window sizes and which indexed values are in their values sets. Until the
block runs out (or :data:`BLOCK_SECONDS` pass, at most half the retention, so no TTL of the
series can run out meanwhile) an event whose time the script would accept as it is (not ahead
of the Redis clock, not past the retention) and whose indexed values are all known goes as::

    EXISTS time meta                                   -- the series is there
    GET seq                                            -- the counter there, not reset
    SMEMBERS cachesizes                                -- no window size cached since
    HSET stage <fields>; PEXPIRE stage <3 x retention>
    RENAMENX stage e:<id>; DEL stage                   -- an existing hash is never merged into
    ZADD time NX <t> <id>
    ZADD by:<f>:<v> NX <t> <id>; PEXPIRE by:<f>:<v> <2 x retention>
    SADD values:<f> <v>                                -- 0: the value was in its set
    ZREMRANGEBYSCORE cache:<w> <start> <start>         -- per cached size: the window is stale

Each reply says whether Redis agreed: a key missing (expired, deleted, the series retired), of
another type, the counter lower than the block (the series deleted and started again), a new
cached size, a value no longer in its set, or the id already taken. Then ``events_takeback.lua``
removes exactly what the transaction wrote and the event goes by the script (which also refuses
what must be refused, nothing written): two more round trips, rare. The block is forgotten.

What the script does per record and the fast path does per block instead: pruning (the script
call reserving a block prunes twice as many events as it reserves ids), refreshing the series'
TTLs, rewriting the stored configuration. Ids stay unique (blocks come from ``INCRBY``; the
script never gives an id the time index holds); a block's ids not used before it expires are
skipped, so ids of several processes interleave and have gaps.

Only for ``record()`` on a plain single-node client (``core/transaction.py``); on a cluster, in
a ``Batch``, deferred, async and ``record_many`` the script runs as before.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError

from ..core import transaction
from ..core.batch import run_calls
from ..core.retention import MAX_AHEAD
from ..core.steps import ScriptCall
from ..core.transaction import PlainClient, bulk
from .codec import window_index
from .prepare import Prepared
from .queries import script

if TYPE_CHECKING:
    from .model import EventSeries

#: Most ids a process reserves at once for one series.
MAX_BLOCK = 64
#: Longest a block serves (and at most half the series' retention), in seconds.
BLOCK_SECONDS = 60.0
#: A record of a series this process recorded less than this ago (seconds) reserves ids.
IDLE_SECONDS = 1.0
#: Series a process remembers (a cache: forgetting one costs one script call).
STATES_SIZE = 10_000
#: Indexed (field, value) pairs remembered per series.
KNOWN_SIZE = 10_000
#: Seconds of slack on the Redis clock as the process estimates it.
CLOCK_SLACK = 0.005


def _command(*args: bytes) -> bytes:
    return b"*%d\r\n" % len(args) + b"".join(bulk(arg) for arg in args)


@dataclass(frozen=True)
class Entry:
    """An indexed (field, value) as the transaction writes it, packed once."""

    index: str
    values: str
    text: str
    zadd: bytes  # ZADD <index> NX, then the score and id follow
    rest: bytes  # PEXPIRE <index> <ttl>; SADD <values> <value>


@dataclass
class State:
    """What this process knows of one series on one server, and its block of ids."""

    series: EventSeries
    base: str
    encode: Any  # str -> bytes, as the client encodes
    retention: float
    lock: threading.Lock = field(default_factory=threading.Lock)
    next: int = 0
    end: int = 0  # the block is [next, end)
    size: int = 0  # ids last reserved
    deadline: float = 0.0
    last: float = -math.inf  # when this process last recorded the series (monotonic)
    clock: tuple[float, float, float] = (0.0, 0.0, 0.0)  # Redis seconds, sent, received
    sizes: frozenset[Any] = frozenset()
    windows: tuple[tuple[int, bytes], ...] = ()
    known: dict[tuple[str, str], Entry] = field(default_factory=dict)
    # The constant parts of the transaction, packed once (see __post_init__).
    exists: bytes = field(init=False)  # EXISTS time meta
    fixed: bytes = field(init=False)  # GET seq; SMEMBERS cachesizes
    stage: bytes = field(init=False)
    renamenx: bytes = field(init=False)  # PEXPIRE stage <ttl>; RENAMENX stage, the hash follows
    hash_prefix: bytes = field(init=False)
    del_stage: bytes = field(init=False)
    zadd_time: bytes = field(init=False)  # ZADD time NX, the score and id follow

    def __post_init__(self) -> None:
        e, base = self.encode, self.base
        ttl = b"%d" % math.ceil(3 * self.retention * 1000)
        stage = e(f"{base}:stage")
        self.exists = _command(b"EXISTS", e(f"{base}:time"), e(f"{base}:meta"))
        self.fixed = _command(b"GET", e(f"{base}:seq")) + _command(
            b"SMEMBERS", e(f"{base}:cachesizes")
        )
        self.stage = bulk(stage)
        self.renamenx = _command(b"PEXPIRE", stage, ttl) + b"*3\r\n$8\r\nRENAMENX\r\n" + self.stage
        self.hash_prefix = e(f"{base}:e:")
        self.del_stage = _command(b"DEL", stage)
        self.zadd_time = b"*5\r\n$4\r\nZADD\r\n" + bulk(e(f"{base}:time")) + b"$2\r\nNX\r\n"

    def entry(self, field_name: str, text: str) -> Entry:
        e, base = self.encode, self.base
        index, values = f"{base}:by:{field_name}:{text}", f"{base}:values:{field_name}"
        ttl = b"%d" % math.ceil(2 * self.retention * 1000)
        return Entry(
            index,
            values,
            text,
            b"*5\r\n$4\r\nZADD\r\n" + bulk(e(index)) + b"$2\r\nNX\r\n",
            _command(b"PEXPIRE", e(index), ttl) + _command(b"SADD", e(values), e(text)),
        )

    def reservation(self, now: float, t: float) -> int:
        """Ids the next script call reserves: none while the block serves, nor for an event the
        transaction could not take (an old backfill, by this process' clock); twice the last
        block's if it was used up in time; one while the series is recorded again and again."""
        if self.next < self.end and now < self.deadline:
            return 0
        wall = time.time()
        if not wall - self.retention / 2 < t < wall + MAX_AHEAD:
            return 0
        if self.next >= self.end and self.size and now < self.deadline:
            return min(MAX_BLOCK, 2 * self.size)
        if now - self.last < IDLE_SECONDS:
            return max(1, self.size // 2)
        return 0

    def learn(self, reply: Any, reserve: int, event: Prepared, sent: float) -> None:
        """A script call's reply (``events_record.lua``): its block, clock, sizes, values."""
        received = time.monotonic()
        if len(reply) < 5 or int(reply[1]):
            return
        with self.lock:
            if reserve:
                first = int(reply[0]) + 1
                self.next, self.end, self.size = first, first + reserve, reserve
                self.deadline = received + min(BLOCK_SECONDS, self.retention / 2)
            self.clock = (int(reply[2]) / 1000, sent, received)
            self.sizes = frozenset(reply[3])
            self.windows = tuple(
                (
                    size,
                    b"*4\r\n$16\r\nZREMRANGEBYSCORE\r\n"
                    + bulk(self.encode(f"{self.base}:cache:{size}")),
                )
                for size in sorted(int(s) for s in reply[3])
            )
            flags = reply[4].decode() if isinstance(reply[4], bytes) else str(reply[4])
            for (name, text), own in zip(event[2], flags, strict=False):
                if own == "1" and (name, text) not in self.known and len(self.known) < KNOWN_SIZE:
                    self.known[name, text] = self.entry(name, text)

    def take(self, t: float, entries: Sequence[tuple[str, str]]) -> tuple[int, list[Entry]] | None:
        """An id of the block and the entries of an event at ``t``, if the transaction may
        record it (else ``None``: the script does)."""
        now = time.monotonic()
        with self.lock:
            if self.next >= self.end or now >= self.deadline:
                return None
            redis_now, sent, received = self.clock
            if t > redis_now + (now - received) - CLOCK_SLACK + MAX_AHEAD:
                return None  # maybe ahead of the Redis clock: the script refuses or accepts
            if t < redis_now + (now - sent) + CLOCK_SLACK - self.retention:
                return None  # maybe past the retention: the script skips it
            known = self.known
            found = [known.get(entry) for entry in entries]
            if None in found:
                return None
            event_id = self.next
            self.next += 1
            return event_id, found  # type: ignore[return-value]


#: Per (server, series configuration): what this process knows of it.
_states: dict[tuple[str, tuple[Any, ...]], State] = {}


def _state(series: EventSeries, client: PlainClient) -> State:
    series._record_head(True)
    assert series._head is not None
    key = (transaction.where(client), series._head[0])
    state = _states.get(key)
    if state is None:
        if len(_states) >= STATES_SIZE:
            _states.clear()
        encoder = client.connection_pool.get_encoder()
        state = _states[key] = State(series, series.key(), encoder.encode, series.retention)
    return state


# A forked child must not write from its parent's blocks (nor wait on a lock the parent held).
os.register_at_fork(after_in_child=_states.clear)


def forget(series: EventSeries) -> None:
    """Forget what this process knows of ``series`` (it is being deleted)."""
    for key in [key for key, state in _states.items() if state.base == series.key()]:
        _states.pop(key, None)


def forget_all() -> None:
    """Forget every series (tests; a process that wants every record to go by the script)."""
    _states.clear()


def record(series: EventSeries, client: PlainClient, event: Prepared) -> int:
    """Record ``event`` (prepared) of ``series`` as a transaction if this process may, else by
    the script (reserving ids for the next ones); its id."""
    state = _state(series, client)
    at, flat, entries = event
    taken = state.take(float(at), entries)
    if taken is not None and _transaction(state, client, at, flat, *taken):
        state.last = time.monotonic()
        return taken[0]
    sent = time.monotonic()
    reserve = state.reservation(sent, float(at))
    state.last = sent
    call = series._record_call(
        [event], client, reserve, lambda reply: state.learn(reply, reserve, event, sent)
    )
    first: int = run_calls(client, [call])[0]
    return first


def _transaction(
    state: State, client: PlainClient, at: str, flat: list[bytes], event_id: int, found: list[Entry]
) -> bool:
    """The transaction of one event; whether it stands (else it was taken back)."""
    ident = b"%d" % event_id
    tail = bulk(at.encode()) + bulk(ident)
    windows = state.windows
    parts = [
        transaction.MULTI,
        state.exists,
        state.fixed,
        b"*%d\r\n$4\r\nHSET\r\n" % (2 + len(flat)),
        state.stage,
        *(bulk(value) for value in flat),
        state.renamenx,
        bulk(state.hash_prefix + ident),
        state.del_stage,
        state.zadd_time,
        tail,
    ]
    for entry in found:
        parts += (entry.zadd, tail, entry.rest)
    if windows:
        t = float(at)
        for size, prefix in windows:
            start = bulk(b"%d" % (window_index(t, size) * size))
            parts += (prefix, start, start)
    request = b"".join(parts)
    count = 8 + 3 * len(found) + len(windows)
    replies = transaction.exec_packed(client, lambda _connection: request, count)
    if replies is None:
        return False
    if _stands(state, replies, len(flat) // 2, len(found)):
        return True
    with state.lock:
        state.next = state.end = state.size = 0  # the block is forgotten
        state.known.clear()
    _take_back(client, state, replies, ident, found)
    return False


def _stands(state: State, replies: list[Any], n_fields: int, n: int) -> bool:
    """Whether the transaction's replies say Redis held what this process knew: every key
    there, the counter at least the block's end, the cached sizes as known, a new hash of
    ``n_fields`` fields under the id, the id new in every sorted set, every value in its set,
    no error (an error reply is a :class:`ResponseError`, equal to no number)."""
    if replies[3 : 8 + 3 * n] != [n_fields, 1, 1, 0, 1, *([1, 1, 0] * n)]:
        return False
    seq = replies[1]
    if replies[0] != 2 or not isinstance(seq, bytes | str) or not seq.isdigit():
        return False
    if int(seq) < state.end - 1:
        return False
    if not isinstance(replies[2], list | set) or frozenset(replies[2]) != state.sizes:
        return False
    return all(type(reply) is int for reply in replies[8 + 3 * n :])


def _take_back(
    client: PlainClient, state: State, replies: list[Any], ident: bytes, found: list[Entry]
) -> None:
    """Remove what the transaction wrote (``events_takeback.lua``)."""
    keys = [f"{state.base}:time", f"{state.base}:e:{ident.decode()}"]
    args: list[str | bytes] = [ident, str(int(replies[5] == 1)), str(int(replies[7] == 1))]
    for j, entry in enumerate(found):
        keys += [entry.index, entry.values]
        sadd = replies[10 + 3 * j]
        args += [
            str(int(replies[8 + 3 * j] == 1)),
            str(int(not isinstance(sadd, ResponseError))),
            entry.text,
        ]
    run_calls(client, [ScriptCall(script("events_takeback"), keys, args)])
