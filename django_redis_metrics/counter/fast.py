"""One increment as a bare transaction, when it falls in slices a script call of this process
opened: ``MULTI; HINCRBY`` per precision ``; HINCRBY meta t; EXEC``.

``counter_incr.lua`` does upkeep only when a write opens a slice (retention trim, heads, TTLs,
samples, listing) and reads the Redis clock to refuse slices too far ahead. An increment of the
very slices the script last accepted from this process for this counter (same server, keys,
samples and precisions) needs none of it: the slices exist, the heads are at least there (so
nothing falls out), the TTLs were refreshed when they opened, the counter was listed, and a
slice the script accepted is never refused as ahead. Such an increment is a handful of C
commands, no Lua (about a third of the script's server time, and less to pack).

Whatever the process's memory says, Redis may disagree (a key evicted, expired or deleted, the
counter retired by the cleaner, a slice trimmed by a later write elsewhere): an ``HINCRBY``
answering the count itself made its field, so its slice, maybe its key (the lifetime total's: maybe
the meta hash). The script's repair form then runs next (one more round trip, rare) and does what
the script does for a slice that opened, the key's TTL set again (an ``EXISTS`` of the keys to tell
a missing key from a trimmed slice cost Redis as much as the increments): retention, TTL safety net,
meta and listing are as the script leaves them, only not in the same round trip. An error reply (a
key of another type, an overflow) has the increments that ran taken back in one more transaction and
returns ``False``: the caller sends the script, which refuses the write as always.

Only for a plain single-node client, sync or async (``core/transaction.py``: ``aincr`` awaits
the same transaction); on a cluster, in a ``Batch`` and for ``defer=True`` the script runs as
before.

In a ``Batch``, the increments of one counter queued one after another are sent as one call in
the script's general form instead (``counter/plan.py``'s ``IncrementRun``): one upkeep per
precision for all the slices they open, where one call each would pay it per slice. They fold
while their finest slices fall in one block (at most ``FOLD_SLICES``, and at most the server's
own ``hash-max-listpack-entries`` less the samples, so a hash never holds more fields than stay
in Redis' compact encoding before the call trims it) and their pairs within
``Counter.MAX_PAIRS_PER_CALL``. The sender's batches are not folded (its calls are numbered
one by one, ``sending/``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from redis.exceptions import ResponseError

from ..core import catalogue, server_clock, transaction
from ..core.batch import ScriptCall, calls_steps, run_calls
from ..core.connection import AnyRedisClient, AsyncRedisClient, RedisClient
from ..core.drive import adrive
from ..core.keys import catalogue_key
from ..core.retention import MAX_AHEAD
from ..core.scripts import ScriptLibrary
from ..core.server_clock import Reading
from ..core.steps import Steps
from . import opening
from .keys import KIND

if TYPE_CHECKING:
    from .model import Counter

script = ScriptLibrary(__name__.rpartition(".")[0])

#: A counter as this module knows it: server, key base, samples, precisions.
Fact = tuple[str, str, int, tuple[int, ...]]


@dataclass(slots=True)
class Opened:
    """The latest slices a script call of this process opened for one counter: their starts,
    the instants ``[low, high)`` whose slices they are at every precision, and the request of
    the transaction adding to them (packed at its first use)."""

    starts: tuple[int, ...]
    low: int
    high: int
    request: transaction.IncrRequest
    #: Whether the Redis clock had reached every one of ``starts`` when they were written (so
    #: each head is at least there): only then may a later increment open the next slices as a
    #: transaction (``opening.py``).
    reached: bool
    #: Per precision, the monotonic instant until which this process knows its hash lives (a
    #: TTL it set itself; 0: unknown).
    alive: tuple[float, ...]

    @property
    def keys(self) -> list[str]:
        """Each precision's hash, then the meta hash: the keys of the request's fields."""
        return [key for key, _ in self.request.fields]

    @property
    def fields_base(self) -> str:
        """The counter's key base (its meta key without ``:meta``)."""
        return self.request.fields[-1][0].removesuffix(":meta")


#: Counters whose latest slices a script call of this process opened (or added to), with those
#: slices; bounded, as a cache: forgetting one costs one script call.
OPENED_SIZE = 10_000
_opened: dict[Fact, Opened] = {}


def fact_of(client: RedisClient, base: str, samples: int, precisions: Sequence[int]) -> Fact:
    """What :data:`_opened` is keyed by (``client`` a plain single-node one: its pool says which
    server it talks to; a mistaken server only costs a repair, as the replies tell what Redis
    really holds)."""
    return transaction.where(client), base, samples, tuple(precisions)  # type: ignore[arg-type]


def record(fact: Fact, starts: tuple[int, ...], reached: bool = False) -> None:
    """A script call (or an opening transaction) wrote to ``starts`` and the counter is listed:
    later increments of the same slices may take the transaction; ``reached``: the Redis clock
    had reached them (:attr:`Opened.reached`)."""
    known = _opened.get(fact)
    if known is not None and known.starts == starts and known.reached >= reached:
        return
    if known is None and len(_opened) >= OPENED_SIZE:
        _opened.clear()
    _opened[fact] = _opened_at(fact, starts, reached)


def _opened_at(
    fact: Fact, starts: tuple[int, ...], reached: bool, alive: tuple[float, ...] | None = None
) -> Opened:
    """What the process knows once ``starts`` of ``fact`` were written."""
    base, precisions = fact[1], fact[3]
    meta = f"{base}:meta"
    keys = [f"{base}:{p}" for p in precisions]
    fields = [(key, str(start)) for key, start in zip(keys, starts, strict=True)]
    fields.append((meta, "t"))
    high = min(start + precision for start, precision in zip(starts, precisions, strict=True))
    request = transaction.IncrRequest(fields)
    return Opened(starts, max(starts), high, request, reached, alive or (0.0,) * len(starts))


def follow_up(
    counter: Counter, client: AnyRedisClient, fact: Fact | None, starts: tuple[int, ...]
) -> Callable[[Any], Steps[None]]:
    """The follow-up of a short-form script call writing to ``starts``: the counter listed if
    need be, and, where the fast path runs (``fact``), its slices recorded as opened."""
    if fact is None:
        return counter._listing_steps
    return partial(_recorded, counter, client, fact, starts, time.monotonic())


def _recorded(
    counter: Counter,
    client: AnyRedisClient,
    fact: Fact,
    starts: tuple[int, ...],
    built: float,
    unlisted: Any,
) -> Steps[None]:
    if not int(unlisted):
        clock = server_clock.cached(client)  # the call was built before it was sent
        record(fact, starts, clock is not None and max(starts) <= clock.earliest(built))
    yield from counter._listing_steps(unlisted)


def forget_all() -> None:
    """Forget every counter (tests; a process that wants every increment to go by the script)."""
    _opened.clear()


def _ready(fact: Fact | None, timestamp: float, count: int) -> Opened | None:
    """The opened slices an increment of ``count`` at ``timestamp`` may add to, if any."""
    if fact is None or count == 0:  # 0: a new slice would look like it
        return None
    opened = _opened.get(fact)
    if opened is None or not opened.low <= timestamp < opened.high:
        return None
    return opened


#: What the transaction's replies call for: nothing, the take-back of an error, a repair.
DONE, ERROR = "", "error"


def _verdict(
    fact: Fact, request: transaction.IncrRequest, replies: list[Any], count: int, opens: Any = ()
) -> str:
    """:data:`DONE`, :data:`ERROR` (the fact forgotten), or the repair's flags. ``replies``: each
    slice's ``HINCRBY``, the lifetime total's, then an opening's upkeep; ``opens``: per
    precision, whether this transaction opened its slice (a new field is expected there)."""
    if _steady(replies, count):
        return DONE
    if any(isinstance(result, ResponseError) for result in replies):
        _opened.pop(fact, None)
        return ERROR
    slices = len(request.fields) - 1
    if replies[slices] == count:  # the meta hash may have been made here: all upkeep
        return "2" * slices
    flags = "".join(
        "2" if result == count and not (opens and opens[i]) else "0"
        for i, result in enumerate(replies[:slices])
    )
    return flags if flags.strip("0") else DONE


def _steady(replies: list[Any], count: int) -> bool:
    """The usual replies: no field made here (no ``HINCRBY`` answered the count itself), no
    error."""
    return count not in replies and set(map(type, replies)) == {int}


def _live(fact: Fact | None, timestamp: float) -> bool:
    """Whether an increment at ``timestamp`` of a counter this process wrote may open its next
    slices: recent by this process's clock (within its finest window), so worth a reading of
    the Redis clock."""
    if fact is None or fact not in _opened:
        return False
    wall = time.time()
    return wall - fact[2] * min(fact[3]) < timestamp <= wall + 1


def _opening(
    fact: Fact | None, timestamp: float, count: int, clock: Reading | None
) -> tuple[opening.Opening, Opened] | None:
    """What an increment that opens slices sends, and what the process knows once it ran."""
    if fact is None or count == 0 or clock is None or not clock.expire_gt:
        return None
    known = _opened.get(fact)
    if known is None or not known.reached:
        return None
    planned = opening.plan(fact, known, timestamp, clock, time.monotonic())
    if planned is None:
        return None
    return planned, _opened_at(fact, planned.starts, True, planned.alive)


def try_incr(
    counter: Counter, client: RedisClient, fact: Fact | None, timestamp: float, count: int
) -> bool:
    """Add ``count`` to the slices of ``timestamp`` of ``counter`` (its fast path key ``fact``,
    ``None`` where it never runs) as a bare transaction, if this process saw a script call
    accept those very slices, or can open the next ones (``opening.py``); whether it did
    (``False``: the caller sends the script)."""
    plain: Any = client
    opened = _ready(fact, timestamp, count)
    if opened is not None:
        replies = transaction.send_incr(plain, opened.request, count)
        if replies is None:
            return False
        return _steady(replies, count) or _settled(
            plain, Sent(counter, fact, opened, count), replies
        )
    clock = server_clock.reading(plain) if _live(fact, timestamp) else None
    prepared = _opening(fact, timestamp, count, clock)
    if prepared is None:
        return False
    planned, opened = prepared
    replies = transaction.exec_packed(
        plain,
        lambda connection: planned.pack(
            connection, opened.request.request(connection, count), opened.keys
        ),
        len(opened.request.fields) + len(planned.upkeep),
    )
    sent = Sent(counter, fact, opened, count, planned.opens)
    if replies is None or not _settled(plain, sent, replies):
        return False
    _opened[fact] = opened  # type: ignore[index]
    return True


@dataclass(slots=True)
class Sent:
    """A transaction sent for ``counter`` (its fast path key ``fact``): the slices it added
    ``count`` to, and per precision whether it opened its slice (``opens``)."""

    counter: Counter
    fact: Any
    opened: Opened
    count: int
    opens: Any = ()

    def outcome(self, client: Any, replies: list[Any]) -> tuple[str, Any]:
        """What its replies call for: ``(DONE, None)``, ``(ERROR, the fields whose increments
        ran, to take back)`` or ``("repair", the script's repair call)``."""
        opened = self.opened
        verdict = _verdict(self.fact, opened.request, replies, self.count, self.opens)
        if verdict == ERROR:
            return ERROR, _ran(opened.request.fields, replies[: len(opened.request.fields)])
        if verdict:
            base, starts = opened.fields_base, opened.starts
            return "repair", repair_call(self.counter, client, base, self.count, starts, verdict)
        return DONE, None


def _settled(client: Any, sent: Sent, replies: list[Any]) -> bool:
    """Act on a transaction's replies: nothing, a repair, or the take-back of an error reply
    (``False``: the caller sends the script, which refuses the write as always)."""
    what, then = sent.outcome(client, replies)
    if what == ERROR:
        back = transaction.IncrRequest(then)
        if then and transaction.send_incr(client, back, -sent.count) is None:
            raise ResponseError(TAKE_BACK_FAILED)
        return False
    if then is not None:
        run_calls(client, [then])
    return True


async def atry_incr(
    counter: Counter, client: AsyncRedisClient, fact: Fact | None, timestamp: float, count: int
) -> bool:
    """:func:`try_incr` on an async client (a plain single node, ``fact`` says)."""
    plain: Any = client
    opened = _ready(fact, timestamp, count)
    if opened is not None:
        replies = await transaction.asend_incr(plain, opened.request, count)
        if replies is None:
            return False
        return _steady(replies, count) or await _asettled(
            plain, Sent(counter, fact, opened, count), replies
        )
    clock = await server_clock.areading(plain) if _live(fact, timestamp) else None
    prepared = _opening(fact, timestamp, count, clock)
    if prepared is None:
        return False
    planned, opened = prepared
    replies = await transaction.aexec_packed(
        plain,
        lambda connection: planned.pack(
            connection, opened.request.request(connection, count), opened.keys
        ),
        len(opened.request.fields) + len(planned.upkeep),
    )
    sent = Sent(counter, fact, opened, count, planned.opens)
    if replies is None or not await _asettled(plain, sent, replies):
        return False
    _opened[fact] = opened  # type: ignore[index]
    return True


async def _asettled(client: Any, sent: Sent, replies: list[Any]) -> bool:
    """:func:`_settled` on an async client."""
    what, then = sent.outcome(client, replies)
    if what == ERROR:
        back = transaction.IncrRequest(then)
        if then and await transaction.asend_incr(client, back, -sent.count) is None:
            raise ResponseError(TAKE_BACK_FAILED)
        return False
    if then is not None:
        await adrive(calls_steps([then]), client)
    return True


def repair_call(
    counter: Counter,
    client: AnyRedisClient,
    base: str,
    count: int,
    starts: Sequence[int],
    flags: str,
) -> ScriptCall:
    """The script's repair form: the upkeep of the slices ``flags`` marks, which the transaction
    made (``counter_incr.lua``'s header)."""
    inline = catalogue.inline_catalogue(client)
    keys = [f"{base}:meta", *(f"{base}:{p}" for p in counter.precisions)]
    args: list[str | int] = [counter.name, counter.samples, int(inline), MAX_AHEAD, count, "!"]
    args += [flags, *starts]
    if inline:
        keys.append(catalogue_key(KIND))
    return ScriptCall(script("counter_incr"), keys, args, counter._listing_steps)


TAKE_BACK_FAILED = "A counter's increments could not be taken back after an error reply."


def _ran(fields: Sequence[tuple[str, str]], results: Sequence[Any]) -> list[tuple[str, str]]:
    """The fields of a transaction that met an error reply whose increments ran, to take back
    with ``HINCRBY -count`` in one more transaction (none touches a key that refused its
    increment)."""
    return [
        field
        for field, result in zip(fields, results, strict=True)
        if not isinstance(result, ResponseError)
    ]
