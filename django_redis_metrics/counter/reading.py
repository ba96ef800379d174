"""A counter's reads of one precision (``recent`` and ``series``) as one request written straight
to a pooled connection, and the turning of a stored hash into their answers.

A precision's hash is compact (at most ``samples`` slices and the few a clock ahead adds), so
both reads take it whole. Most of a read's cost is the caller's, not Redis': on RESP3 (redis-py
8's default) ``HGETALL`` answers a map, which hiredis builds into a dict one ``popitem`` call
per field (hiredis-py PR #237), about four times the cost of parsing the same fields as a list.
On a plain single-node client (``core/transaction.py``) the read is therefore sent as
``MULTI; HKEYS; HVALS; EXEC``: the same snapshot (one transaction), two flat lists, about 10 %
more Redis time than ``HGETALL``; on RESP2, where ``HGETALL`` is a flat list already, as
``HGETALL``. The listing of the counter's labelled series travels in the same request, as
``labels/aggregate.py``'s ``with_series`` sends it. The async twins (``arecent``, ``aseries``)
send the same request on the loop's plain client.

Anything unusual answers ``None`` and the caller goes the way of steps (``drive``), which reads
the same data with ``HGETALL`` and reports errors and retries as every read does: a Redis
Cluster, a sharded counter, a counter of more samples than one read takes, an error reply or a
dropped connection, and a client whose user Redis refused ``MULTI`` (an ACL user without
``+multi``/``+exec``: remembered for its pool, so later reads go the steps' way at once).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from itertools import repeat
from typing import TYPE_CHECKING, Any

from redis.exceptions import ConnectionError, ResponseError, TimeoutError

from ..core import transaction
from ..core.aio import get_async_connection
from ..core.connection import get_redis_connection
from ..core.drive import adrive, drive
from ..core.keys import catalogue_key
from ..core.labels.aggregate import series_steps
from ..core.labels.labelling import series_range
from ..core.shards import shard_count
from ..core.steps import Steps
from ..core.timeutil import When, slice_start, to_timestamp
from .keys import KIND

if TYPE_CHECKING:
    from .model import Counter

#: A hash read whole: its fields and their values, in the same order (bytes, or str when the
#: client decodes responses).
Stored = tuple[Sequence[Any], Sequence[Any]]

#: Packed requests per (hash key, listing bounds or None, RESP3, packer); bounded.
_requests: dict[tuple[str, tuple[str, bytes, bytes] | None, bool, type], bytes] = {}
REQUESTS_SIZE = 10_000


def window(stored: Stored, last: int, precision: int, count: int) -> list[tuple[int, int]]:
    """The ``count`` slices of ``precision`` ending with the one starting at ``last``, each with
    its stored count or 0, oldest first: ``recent``'s answer from its hash read whole."""
    fields, values = stored
    starts = range(last - precision * (count - 1), last + 1, precision)
    if not fields:
        return list(zip(starts, repeat(0), strict=False))
    wanted = _fields(starts, isinstance(fields[0], bytes))
    if len(fields) >= count and fields[-1] == wanted[-1] and tuple(fields[-count:]) == wanted:
        # The usual hash of a busy counter: its newest fields are the window, in order.
        return list(zip(starts, map(int, values[-count:]), strict=True))
    counts = dict(zip(fields, values, strict=True))
    return list(zip(starts, map(int, map(counts.get, wanted, repeat(0))), strict=True))


@lru_cache(maxsize=256)
def _fields(starts: range, binary: bool) -> tuple[bytes, ...] | tuple[str, ...]:
    """The hash fields of ``starts`` as a reply spells them: reads in the same slice repeat."""
    if binary:
        return tuple(b"%d" % start for start in starts)
    return tuple(str(start) for start in starts)


def samples(stored: Stored) -> list[tuple[int, int]]:
    """Every stored ``(slice start, count)``, oldest first: ``series``' answer."""
    fields, values = stored
    return sorted(zip(map(int, fields), map(int, values), strict=True))


def split(data: dict[Any, Any]) -> Stored:
    """An ``HGETALL`` or ``HSCAN`` reply (a dict) as fields and values."""
    return list(data), list(data.values())


def recent(
    counter: Counter, precision: int, count: int | None, until: When
) -> list[tuple[int, int]] | None:
    """``counter.recent(...)`` in one request when it reads the hash whole on a plain client;
    else ``None`` (nothing validated beyond what the steps validate first, in their order)."""
    planned = _whole_window(counter, precision, count, until)
    if planned is None:
        return None
    precision, last, wanted = planned
    found = _read(counter, precision)
    return None if found is None else _combined(counter, found, last, precision, wanted)


def _whole_window(
    counter: Counter, precision: int, count: int | None, until: When
) -> tuple[int, int, int] | None:
    """``(precision, last slice start, slices wanted)`` of a ``recent`` read whole (at least
    half the window, of a hash one read takes), else ``None``."""
    kept = counter.samples  # the setting read once
    wanted = kept if count is None else count
    if count is not None and not (type(count) is int and kept >= count > 0):
        return None
    if kept > counter.READ_CHUNK or 2 * wanted < kept:
        return None
    precision = counter._check_precision(precision)
    return precision, slice_start(to_timestamp(until, "until"), precision), wanted


def series(counter: Counter, precision: int) -> list[tuple[int, int]] | None:
    """``counter.series(precision)`` in one request on a plain client; else ``None``."""
    precision = counter._check_precision(precision)
    found = _read(counter, precision) if counter.samples <= counter.READ_CHUNK else None
    return None if found is None else _combined(counter, found, None, precision, 0)


async def arecent(
    counter: Counter, precision: int, count: int | None, until: When
) -> list[tuple[int, int]] | None:
    """:func:`recent` on the loop's client (``Counter.arecent``)."""
    planned = _whole_window(counter, precision, count, until)
    if planned is None:
        return None
    precision, last, wanted = planned
    found = await _aread(counter, precision)
    if found is None:
        return None
    own, theirs = _own_and_theirs(counter, found, last, precision, wanted)
    return own if theirs is None else added_recent(own, await adrive(theirs))


async def aseries(counter: Counter, precision: int) -> list[tuple[int, int]] | None:
    """:func:`series` on the loop's client (``Counter.aseries``)."""
    precision = counter._check_precision(precision)
    found = await _aread(counter, precision) if counter.samples <= counter.READ_CHUNK else None
    if found is None:
        return None
    own, theirs = _own_and_theirs(counter, found, None, precision, 0)
    return own if theirs is None else added_series(own, await adrive(theirs))


def _combined(
    counter: Counter, found: tuple[list[Any], Stored], last: int | None, precision: int, count: int
) -> list[tuple[int, int]]:
    """The counter's own answer, with its labelled series' added when it has some (read as
    ``with_series`` reads them: one more round trip, together)."""
    own, theirs = _own_and_theirs(counter, found, last, precision, count)
    if theirs is None:
        return own
    return added_series(own, drive(theirs)) if last is None else added_recent(own, drive(theirs))


def _own_and_theirs(
    counter: Counter, found: tuple[list[Any], Stored], last: int | None, precision: int, count: int
) -> tuple[list[tuple[int, int]], Steps[list[list[tuple[int, int]]]] | None]:
    """The counter's own answer (``last``: ``recent``'s, else ``series``'), and the steps
    reading its labelled series' (``None`` when it has none)."""
    members, stored = found
    own = samples(stored) if last is None else window(stored, last, precision, count)
    if not members:
        return own, None
    if last is None:
        return own, series_steps(counter, members, lambda m: m._own_series_steps(precision))
    return own, series_steps(
        counter, members, lambda m: m._own_recent_steps(precision, count, last)
    )


def added_series(
    own: list[tuple[int, int]], theirs: Sequence[list[tuple[int, int]]]
) -> list[tuple[int, int]]:
    """Samples of several series added per slice start."""
    added: dict[int, int] = dict(own)
    for each in theirs:
        for start, count in each:
            added[start] = added.get(start, 0) + count
    return sorted(added.items())


def added_recent(
    own: list[tuple[int, int]], theirs: Sequence[list[tuple[int, int]]]
) -> list[tuple[int, int]]:
    """Zero-filled windows added slice by slice, on the slices of ``own``."""
    added = dict(own)
    for each in theirs:
        for start, count in each:
            if start in added:
                added[start] += count
    return list(added.items())


def _read(counter: Counter, precision: int) -> tuple[list[Any], Stored] | None:
    """``(members listing the counter's series, its hash read whole)``, or ``None`` when the
    request does not fit (see the module's docstring)."""
    if counter.family is None and shard_count(counter) > 1:
        return None
    client: Any = get_redis_connection()
    if not transaction.supports(client):
        return None
    return read_whole(client, counter.key(precision), _listing(counter))


async def _aread(counter: Counter, precision: int) -> tuple[list[Any], Stored] | None:
    """:func:`_read` on the loop's client."""
    if counter.family is None and shard_count(counter) > 1:
        return None
    client: Any = get_async_connection()
    if not transaction.supports_async(client):
        return None
    return await aread_whole(client, counter.key(precision), _listing(counter))


def _listing(counter: Counter) -> tuple[str, bytes, bytes] | None:
    """The catalogue range listing ``counter``'s labelled series (``None`` for a series)."""
    return (catalogue_key(KIND), *series_range(counter.name)) if counter.family is None else None


def read_whole(
    client: Any, key: str, listing: tuple[str, bytes, bytes] | None
) -> tuple[list[Any], Stored] | None:
    """On ``client`` (a plain ``redis.Redis``: ``transaction.supports``), ``ZRANGEBYLEX`` of
    ``listing`` (when given) and hash ``key`` read whole, in one request; ``None`` when Redis
    answered an error anywhere or the connection failed (dropped then)."""
    pool = client.connection_pool
    connection: Any = pool.get_connection()  # redis-py's Connection methods are untyped
    try:
        resp3 = str(getattr(connection, "protocol", 2)) == "3"
        try:
            connection.send_packed_command([_request(connection, key, listing, resp3)])
        except (ConnectionError, TimeoutError, OSError):
            connection.disconnect()
            return None
        replies = transaction.read_replies(connection, _replies(listing, resp3))
    except (ConnectionError, TimeoutError, OSError):
        connection.disconnect()  # replies may be left unread: a read is sent again instead
        return None
    except BaseException:
        connection.disconnect()
        raise
    finally:
        pool.release(connection)
    return _answer(replies, listing, resp3, pool)


async def aread_whole(
    client: Any, key: str, listing: tuple[str, bytes, bytes] | None
) -> tuple[list[Any], Stored] | None:
    """:func:`read_whole` on a plain ``redis.asyncio.Redis`` (``transaction.supports_async``)."""
    pool = client.connection_pool
    connection: Any = await pool.get_connection()
    try:
        resp3 = str(getattr(connection, "protocol", 2)) == "3"
        try:
            await connection.send_packed_command([_request(connection, key, listing, resp3)])
        except (ConnectionError, TimeoutError, OSError):
            await connection.disconnect()
            return None
        replies = await transaction.aread_plainly(connection, _replies(listing, resp3))
    except (ConnectionError, TimeoutError, OSError):
        await connection.disconnect()
        return None
    except BaseException:
        await connection.disconnect()
        raise
    finally:
        await pool.release(connection)
    return _answer(replies, listing, resp3, pool)


def _replies(listing: tuple[str, bytes, bytes] | None, resp3: bool) -> int:
    """How many replies the request gets: the listing's, then the transaction's or HGETALL's."""
    return (listing is not None) + (4 if resp3 else 1)


def _answer(
    replies: list[Any], listing: tuple[str, bytes, bytes] | None, resp3: bool, pool: Any
) -> tuple[list[Any], Stored] | None:
    """``(members, stored)`` from the request's replies; ``None`` on any error reply (``MULTI``
    itself refused: the pool is remembered, its reads go the steps' way from now on)."""
    failed = [index for index, reply in enumerate(replies) if isinstance(reply, ResponseError)]
    if failed:
        if resp3 and failed[0] == (listing is not None):  # MULTI itself refused (an ACL)
            transaction.refused(pool)
        return None
    members: list[Any] = replies[0] if listing is not None else []
    whole = replies[-1]  # EXEC's reply holds its commands' errors, if any
    if not resp3:
        return members, (whole[::2], whole[1::2])
    fields, values = whole
    if isinstance(fields, ResponseError) or isinstance(values, ResponseError):
        return None  # a key of another type: the steps raise its error
    return members, (fields, values)


def _request(
    connection: Any, key: str, listing: tuple[str, bytes, bytes] | None, resp3: bool
) -> bytes:
    """The packed request, built once per key by the connection's own packer."""
    cache_key = (key, listing, resp3, type(getattr(connection, "_command_packer", connection)))
    request = _requests.get(cache_key)
    if request is None:
        commands: list[tuple[Any, ...]] = [] if listing is None else [("ZRANGEBYLEX", *listing)]
        if resp3:
            commands += [("MULTI",), ("HKEYS", key), ("HVALS", key), ("EXEC",)]
        else:
            commands.append(("HGETALL", key))
        if len(_requests) >= REQUESTS_SIZE:
            _requests.clear()
        request = _requests[cache_key] = b"".join(connection.pack_commands(commands))
    return request
