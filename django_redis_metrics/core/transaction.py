"""Setting one bit in a few existing keys (a mark), or adding to a few existing hash fields (a
counter's increment), as one MULTI/EXEC written straight to a pooled connection: the cheapest
atomic write Redis has for them.

A script call costs Redis about 4 µs more than the same commands in a transaction (Lua's set-up,
argument tables, ``redis.call``), and redis-py's ``Pipeline`` costs the caller about 9 µs more
than this. Only for a plain ``redis.Redis`` on one server; anything unusual (a Redis Cluster, a
client with a single dedicated connection, an error reply) answers ``None`` and the caller goes
the script's way, which reports errors the usual way.
"""

from __future__ import annotations

import builtins
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import redis
import redis.asyncio
import redis.connection
from redis.exceptions import ConnectionError, ResponseError, TimeoutError

from .connection import RedisClient

#: The clock redis-py's connections time their health checks by: ``time.time`` up to 5.x, where
#: the module imported the function, ``time.monotonic`` since (it imports the module).
_HEALTH_CLOCK: Any = getattr(redis.connection, "time")  # noqa: B009 - not exported
_HEALTH_CLOCK = getattr(_HEALTH_CLOCK, "monotonic", _HEALTH_CLOCK)

try:  # what a hiredis reader of redis-py answers while a reply has not fully arrived
    from redis._parsers.hiredis import NOT_ENOUGH_DATA as _NOT_ENOUGH
except ImportError:  # pragma: no cover - a redis-py without it: hiredis' own default
    _NOT_ENOUGH = False

#: A plain pooled single-node client, the only kind :func:`supports` admits.
PlainClient: TypeAlias = redis.Redis


#: Connection pools whose Redis user was refused ``MULTI`` (an ACL user without ``+multi``):
#: their writes go the script's way (:func:`_outcome`), their reads the steps' way.
_refused: weakref.WeakSet[Any] = weakref.WeakSet()


def refused(pool: Any) -> None:
    """Remember that ``pool``'s Redis user may not run ``MULTI``: :func:`supports` says no."""
    _refused.add(pool)


def supports(client: RedisClient) -> bool:
    """Whether :func:`set_bit_if_present` may run on ``client``: a plain pooled single node
    whose user may run transactions."""
    return (
        type(client) is redis.Redis
        and client.connection is None
        and client.connection_pool not in _refused
    )


def supports_async(client: object) -> bool:
    """Whether :func:`asend_incr` may run on ``client``: a plain pooled async single node
    whose user may run transactions."""
    return (
        type(client) is redis.asyncio.Redis
        and client.connection is None
        and client.connection_pool not in _refused
    )


def bulk(value: bytes) -> bytes:
    """``value`` as a RESP bulk string."""
    return b"$%d\r\n%s\r\n" % (len(value), value)


#: Per (command, EXISTS keys, queued keys, packer): the packed MULTI and EXISTS, and each queued
#: command up to its key (the field, a SETBIT's offset, an amount follow).
_templates: dict[
    tuple[str, tuple[str, ...], tuple[str, ...], type],
    tuple[bytes, tuple[bytes, ...]],
] = {}
TEMPLATES_SIZE = 10_000


def _template(
    command: str, keys: Sequence[str], targets: Sequence[str], connection: Any
) -> tuple[bytes, tuple[bytes, ...]]:
    """The constant parts of a request, packed once per key tuple by the connection's own packer
    (which decides how a key is encoded: with hiredis, UTF-8): ``MULTI`` and ``EXISTS keys``
    (none: no ``EXISTS``), then ``command key`` for each of ``targets``, its header counting
    four arguments: the other two follow (:func:`bulk`). Keyed by keys only, so a counter's
    requests share one template whatever slices they add to."""
    packer = type(getattr(connection, "_command_packer", connection))
    cache_key = (command, tuple(keys), tuple(targets), packer)
    template = _templates.get(cache_key)
    if template is None:

        def packed(*args: Any) -> bytes:
            return b"".join(connection.pack_command(*args))

        head = packed("MULTI") + (packed("EXISTS", *keys) if keys else b"")
        # "*2" as packed, made "*4": the other arguments follow.
        queued = tuple(b"*4" + packed(command, key)[len(b"*2") :] for key in targets)
        if len(_templates) >= TEMPLATES_SIZE:
            _templates.clear()
        template = _templates[cache_key] = (head, queued)
    return template


#: ``HINCRBY`` as a queued command's header begins, up to its key.
_HINCRBY = b"*4\r\n$7\r\nHINCRBY\r\n"


def key_bulks(keys: Sequence[str], connection: Any) -> tuple[bytes, ...]:
    """Each of ``keys`` as a bulk string, encoded by ``connection``'s packer (cached with the
    ``HINCRBY`` template of the same keys)."""
    return tuple(
        header[len(_HINCRBY) :] for header in _template("HINCRBY", (), keys, connection)[1]
    )


def command(name: bytes, key: bytes, *args: bytes) -> bytes:
    """A packed command of ``key`` (a bulk string, :func:`key_bulks`) and ``args``."""
    return b"*%d\r\n" % (len(args) + 2) + bulk(name) + key + b"".join(map(bulk, args))


def set_bit_if_present(client: redis.Redis, keys: Sequence[str], offset: int) -> bool | None:
    """``MULTI; EXISTS keys; SETBIT key offset 1`` for each key; ``EXEC``, in one round trip
    (:func:`_exec`).

    Returns whether every key existed before (when one did not, SETBIT made it without its
    expiry: the caller repairs it), or ``None`` when Redis answered with an error (refused under
    ``maxmemory``, a key of another type) or the connection failed (the connection is dropped):
    the caller then goes the script's way, which retries and raises as the client is set to.
    Setting a bit twice is harmless, should this transaction have run after all."""
    tail = bulk(b"%d" % offset) + b"$1\r\n1\r\n"

    def pack(connection: Any) -> bytes:
        head, setbits = _template("SETBIT", keys, keys, connection)
        return b"".join((head, *(setbit + tail for setbit in setbits), EXEC))

    try:
        replies = _exec(client, pack, len(keys) + 1)
    except (ConnectionError, TimeoutError, ResponseError):
        return None
    if replies is None or any(isinstance(reply, ResponseError) for reply in replies):
        return None
    return bool(replies[0] == len(keys))


#: Per connection pool, the server and database it talks to (:func:`where`).
_places: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def where(client: redis.Redis) -> str:
    """The server and database a plain single-node ``client`` talks to, for what a process
    remembers of the keys there (a mistaken server only costs the caller a repair)."""
    pool = client.connection_pool
    found = _places.get(pool)
    if found is None:
        kwargs = pool.connection_kwargs
        place = kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}"
        found = _places[pool] = f"{place}/{kwargs.get('db', 0)}"
    return found


#: ``MULTI`` packed: where every request of :func:`exec_packed` starts.
MULTI = b"*1\r\n$5\r\nMULTI\r\n"
#: ``EXEC`` packed: where every transaction's request ends.
EXEC = b"*1\r\n$4\r\nEXEC\r\n"


def exec_packed(client: redis.Redis, build: Callable[[Any], bytes], count: int) -> list[Any] | None:
    """``MULTI``, the ``count`` commands ``build(connection)`` packs (after :data:`MULTI`),
    ``EXEC``, in one round trip on a pooled connection (:func:`_exec`)."""
    return _exec(client, lambda connection: build(connection) + EXEC, count)


def _exec(client: redis.Redis, pack: Callable[[Any], bytes], count: int) -> list[Any] | None:
    """The transaction of ``count`` commands ``pack(connection)`` packs whole (``MULTI`` to
    ``EXEC``), in one round trip on a pooled connection; returns EXEC's replies (each command's
    result or its :class:`ResponseError`: a transaction runs every command it queued).

    ``None`` when nothing ran: the request could not be sent (the connection is dropped), or
    Redis refused a command while queuing it (EXECABORT, under ``maxmemory``); the caller then
    goes the script's way. A write is not idempotent: once the request was sent, a failure to
    read the answer raises (as any write of the client does), it is never sent again."""
    pool = client.connection_pool
    connection: Any = pool.get_connection()  # redis-py's Connection methods are untyped
    try:
        try:
            connection.send_packed_command([pack(connection)])
        except (ConnectionError, TimeoutError, OSError):
            connection.disconnect()
            return None
        replies = read_replies(connection, count + 2)  # "OK", "QUEUED" per command, EXEC's
    except BaseException:
        connection.disconnect()
        raise
    finally:
        pool.release(connection)
    return _outcome(replies, count, pool)


class IncrRequest:
    """The request of ``MULTI; HINCRBY key field amount`` for each of ``fields``; ``EXEC`` for
    one set of fields (a counter's slices while they stay its latest): packed once per packer,
    the request of an amount of 1, the usual one, kept whole. No ``EXISTS``: each key of it
    would cost Redis as much as an ``HINCRBY``, whose reply tells a field it made."""

    __slots__ = ("_packed", "fields")

    def __init__(self, fields: Sequence[tuple[str, str]]) -> None:
        self.fields = tuple(fields)
        #: (packer type, head, each HINCRBY up to its amount, the whole request of 1): one
        #: tuple, replaced whole, so threads sharing the request never see half of it.
        self._packed: tuple[type, bytes, tuple[bytes, ...], bytes] | None = None

    def request(self, connection: Any, amount: int) -> bytes:
        """The packed request adding ``amount``, by ``connection``'s packer."""
        packer = type(getattr(connection, "_command_packer", connection))
        packed = self._packed
        if packed is None or packed[0] is not packer:
            head, headers = _template("HINCRBY", (), [key for key, _ in self.fields], connection)
            incrs = tuple(
                header + bulk(field.encode())
                for header, (_, field) in zip(headers, self.fields, strict=True)
            )
            packed = self._packed = (packer, head, incrs, _incr_request(head, incrs, 1))
        if amount == 1:
            return packed[3]
        return _incr_request(packed[1], packed[2], amount)


def _incr_request(head: bytes, incrs: Sequence[bytes], amount: int) -> bytes:
    tail = bulk(b"%d" % amount)
    return b"".join((head, *(incr + tail for incr in incrs), EXEC))


def send_incr(client: redis.Redis, request: IncrRequest, amount: int) -> list[Any] | None:
    """``request`` adding ``amount``, in one round trip (:func:`_exec`); returns EXEC's replies
    (each HINCRBY's result or its :class:`ResponseError`), or ``None`` when nothing ran."""
    return _exec(
        client, lambda connection: request.request(connection, amount), len(request.fields)
    )


async def asend_incr(
    client: redis.asyncio.Redis, request: IncrRequest, amount: int
) -> list[Any] | None:
    """:func:`send_incr` on an async client (its replies read the usual way)."""
    return await _aexec(
        client, lambda connection: request.request(connection, amount), len(request.fields)
    )


async def aexec_packed(
    client: redis.asyncio.Redis, build: Callable[[Any], bytes], count: int
) -> list[Any] | None:
    """:func:`exec_packed` on an async client."""
    return await _aexec(client, lambda connection: build(connection) + EXEC, count)


async def _aexec(
    client: redis.asyncio.Redis, pack: Callable[[Any], bytes], count: int
) -> list[Any] | None:
    """:func:`_exec` on an async client (its replies read the usual way)."""
    pool = client.connection_pool
    connection: Any = await pool.get_connection()  # type: ignore[no-untyped-call]
    try:
        try:
            await connection.send_packed_command([pack(connection)])
        except (ConnectionError, TimeoutError, OSError):
            await connection.disconnect()
            return None
        replies = await aread_plainly(connection, count + 2)  # "OK", "QUEUED"s, EXEC's
    except BaseException:
        await connection.disconnect()
        raise
    finally:
        await pool.release(connection)
    return _outcome(replies, count, pool)


def _outcome(replies: list[Any], count: int, pool: Any) -> list[Any] | None:
    """What a transaction of ``count`` commands did, from every reply of its request: EXEC's
    reply (``None`` for EXECABORT: nothing ran).

    When Redis refused ``MULTI`` itself (an ACL user without ``+multi``, as the rule
    docs/operations.md gave before), each command ran alone as it came: their own replies are
    what EXEC would have answered, so the write is not sent again by the script (it would count
    twice); the pool is remembered, and its later writes go the script's way."""
    if isinstance(replies[0], ResponseError):
        refused(pool)
        return replies[1 : 1 + count]
    last = replies[-1]
    if isinstance(last, ResponseError):  # EXECABORT: a command was refused while queued
        return None
    if not isinstance(last, list) or len(last) != count:
        raise ResponseError(f"Unexpected reply to a transaction: {last!r}")
    return last


def read_replies(connection: Any, count: int) -> list[Any]:
    """``count`` replies, error replies returned rather than raised.

    ``Connection.read_response`` costs about a microsecond a reply around the parsing (its
    error text, health-check clock, push checks) and a transaction answers ``fields + 3`` times:
    the replies, which come in one packet, are taken from the connection's hiredis reader one
    after another (a RESP3 push message between them goes to the parser's push handler, as
    redis-py's own reading does; a redis-py whose parser does not tell push messages apart
    reads RESP3 through the parser), else from its parser, else (a connection without one: a
    caching proxy) read the usual way. Socket failures raise as ``Connection.read_response``
    raises them."""
    parser = getattr(connection, "_parser", None)
    if parser is None:
        return read_plainly(connection, count)
    reader = getattr(parser, "_reader", None)
    # RESP3 may interleave push messages: hiredis-py tells them by their type, which recent
    # redis-py names on its parser (5.x does not).
    push = getattr(parser, "_hiredis_PushNotificationType", None)
    replies: list[Any] = []
    try:
        if (
            reader is None
            or (push is None and str(connection.protocol) == "3")
            or getattr(parser, "_next_response", _NOT_ENOUGH) is not _NOT_ENOUGH  # 5.x's buffer
        ):
            replies = [parser.read_response() for _ in range(count)]
        else:
            gets = reader.gets
            while len(replies) < count:
                reply = gets()
                while reply is _NOT_ENOUGH or reply is False:  # not all of it arrived yet
                    parser.read_from_socket()
                    reply = gets()
                if isinstance(reply, ConnectionError):  # as the parser raises it
                    raise reply
                if push is not None and isinstance(reply, push):
                    parser.handle_push_response(reply)  # as the parser does: not a reply
                    continue
                replies.append(reply)
    except builtins.TimeoutError as error:  # socket.timeout
        raise TimeoutError("Timeout reading a transaction's replies") from error
    except OSError as error:
        raise ConnectionError(f"Error reading a transaction's replies: {error.args}") from error
    if connection.health_check_interval:
        connection.next_health_check = _HEALTH_CLOCK() + connection.health_check_interval
    return replies


def read_plainly(connection: Any, count: int) -> list[Any]:
    """``count`` replies read the usual way (``Connection.read_response``), error replies
    returned rather than raised: every reply is read, so the connection stays in step."""
    replies: list[Any] = []
    for _ in range(count):
        try:
            replies.append(connection.read_response())
        except ResponseError as error:
            replies.append(error)
    return replies


async def aread_plainly(connection: Any, count: int) -> list[Any]:
    """:func:`read_plainly` on an async connection."""
    replies: list[Any] = []
    for _ in range(count):
        try:
            replies.append(await connection.read_response())
        except ResponseError as error:
            replies.append(error)
    return replies
