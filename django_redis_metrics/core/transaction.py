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
import contextlib
import weakref
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import redis
from redis.exceptions import ConnectionError, ResponseError, TimeoutError

from .connection import RedisClient

#: A plain pooled single-node client, the only kind :func:`supports` admits.
PlainClient: TypeAlias = redis.Redis


def supports(client: RedisClient) -> bool:
    """Whether :func:`set_bit_if_present` may run on ``client``: a plain pooled single node."""
    return type(client) is redis.Redis and client.connection is None


def _bulk(value: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(value), value)


#: Per (command, EXISTS keys, hash fields, packer): the packed MULTI and EXISTS, and each
#: queued command up to its variable arguments (a SETBIT's offset and 1, a HINCRBY's amount).
_templates: dict[
    tuple[str, tuple[str, ...], tuple[tuple[str, str], ...] | None, type],
    tuple[bytes, tuple[bytes, ...]],
] = {}
TEMPLATES_SIZE = 10_000


def _template(
    command: str,
    keys: Sequence[str],
    fields: Sequence[tuple[str, str]] | None,
    connection: Any,
) -> tuple[bytes, tuple[bytes, ...]]:
    """The constant parts of a request, packed once per key tuple by the connection's own
    packer (which decides how a key is encoded: with hiredis, UTF-8): ``MULTI`` and ``EXISTS
    keys``, then ``command key`` for each key (``fields`` is ``None``) or ``command key field``
    for each of ``fields``, its header counting four arguments: the rest follow (``_bulk``)."""
    packer = type(getattr(connection, "_command_packer", connection))
    cache_key = (command, tuple(keys), None if fields is None else tuple(fields), packer)
    template = _templates.get(cache_key)
    if template is None:

        def packed(*args: Any) -> bytes:
            return b"".join(connection.pack_command(*args))

        head = packed("MULTI") + packed("EXISTS", *keys)
        targets = [(key,) for key in keys] if fields is None else list(fields)
        # "*<n>" as packed, made "*4": the other arguments follow.
        queued = tuple(
            b"*4" + packed(command, *target)[len(b"*%d" % (len(target) + 1)) :]
            for target in targets
        )
        if len(_templates) >= TEMPLATES_SIZE:
            _templates.clear()
        template = _templates[cache_key] = (head, queued)
    return template


def set_bit_if_present(client: redis.Redis, keys: Sequence[str], offset: int) -> bool | None:
    """``MULTI; EXISTS keys; SETBIT key offset 1`` for each key; ``EXEC``, in one round trip.

    Returns whether every key existed before (when one did not, SETBIT made it without its
    expiry: the caller repairs it), or ``None`` when Redis answered with an error (refused under
    ``maxmemory``, a key of another type) or the connection failed (the connection is dropped):
    the caller then goes the script's way, which retries and raises as the client is set to."""
    replies_expected = len(keys) + 2  # "OK", then "QUEUED" per command
    pool = client.connection_pool
    connection: Any = pool.get_connection()  # redis-py's Connection methods are untyped
    try:
        head, setbits = _template("SETBIT", keys, None, connection)
        tail = _bulk(b"%d" % offset) + b"$1\r\n1\r\n"
        setbit_commands = (setbit + tail for setbit in setbits)
        request = b"".join((head, *setbit_commands, b"*1\r\n$4\r\nEXEC\r\n"))
        connection.send_packed_command([request])
        failed = False
        for _ in range(replies_expected):
            try:
                connection.read_response()
            except ResponseError:
                failed = True
        try:
            replies = connection.read_response()
        except ResponseError:  # EXECABORT: a command was refused while queued, none ran
            return None
    except (ConnectionError, TimeoutError, OSError):
        # The script's way retries as the client is configured to; setting a bit twice is
        # harmless, should this transaction have run after all.
        connection.disconnect()
        return None
    except BaseException:
        connection.disconnect()
        raise
    finally:
        pool.release(connection)
    if failed or not isinstance(replies, list) or len(replies) != len(keys) + 1:
        return None
    if any(isinstance(reply, ResponseError) for reply in replies):
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


def packed(connection: Any, *args: Any) -> bytes:
    """One command as ``connection`` packs it (with hiredis, keys as UTF-8)."""
    return b"".join(connection.pack_command(*args))


#: ``MULTI`` packed: where every request of :func:`exec_packed` starts.
MULTI = b"*1\r\n$5\r\nMULTI\r\n"


def exec_packed(client: redis.Redis, build: Callable[[Any], bytes], count: int) -> list[Any] | None:
    """``MULTI``, the ``count`` commands ``build(connection)`` packs (after :data:`MULTI`),
    ``EXEC``, in one round trip on a pooled connection; returns EXEC's replies (each command's
    result or its :class:`ResponseError`: a transaction runs every command it queued).

    ``None`` when nothing ran: the request could not be sent (the connection is dropped), or
    Redis refused a command while queuing it (EXECABORT, under ``maxmemory``); the caller then
    goes the script's way. A write is not idempotent: once the request was sent, a failure to
    read the answer raises (as any write of the client does), it is never sent again."""
    pool = client.connection_pool
    connection: Any = pool.get_connection()  # redis-py's Connection methods are untyped
    try:
        request = build(connection) + b"*1\r\n$4\r\nEXEC\r\n"
        try:
            connection.send_packed_command([request])
        except (ConnectionError, TimeoutError, OSError):
            connection.disconnect()
            return None
        _skip_replies(connection, count + 1)  # "OK", then "QUEUED" per command
        try:
            replies = connection.read_response()
        except ResponseError:  # EXECABORT: a command was refused while queued, none ran
            return None
    except BaseException:
        connection.disconnect()
        raise
    finally:
        pool.release(connection)
    if not isinstance(replies, list) or len(replies) != count:
        raise ResponseError(f"Unexpected reply to a transaction: {replies!r}")
    return replies


def _skip_replies(connection: Any, count: int) -> None:
    """Read ``count`` replies whose content does not matter (``QUEUED``, or the error of a
    command refused while queuing, which EXEC then reports). Straight from the connection's
    parser, which returns an error reply rather than raising it: ``Connection.read_response``
    costs a microsecond or two more per reply (a transaction's dozen add up); a socket failure
    is reported as the connection would report it. The caller reads EXEC's reply through the
    connection."""
    parser = getattr(connection, "_parser", None)
    if parser is None:
        for _ in range(count):
            with contextlib.suppress(ResponseError):
                connection.read_response()
        return
    try:
        for _ in range(count):
            parser.read_response()
    except builtins.TimeoutError:
        raise TimeoutError("Timeout reading a transaction's replies") from None
    except OSError as exc:
        raise ConnectionError(f"Error while reading a transaction's replies: {exc}") from None


def incr_if_present(
    client: redis.Redis, keys: Sequence[str], fields: Sequence[tuple[str, str]], amount: int
) -> list[Any] | None:
    """``MULTI; EXISTS keys; HINCRBY key field amount`` for each of ``fields``; ``EXEC``, in one
    round trip; returns EXEC's replies (the number of ``keys`` that existed, then each HINCRBY's
    result or its :class:`ResponseError`), or ``None`` when nothing ran (:func:`exec_packed`)."""
    tail = _bulk(b"%d" % amount)

    def build(connection: Any) -> bytes:
        head, incrs = _template("HINCRBY", keys, fields, connection)
        return b"".join((head, *(incr + tail for incr in incrs)))

    return exec_packed(client, build, len(fields) + 1)
