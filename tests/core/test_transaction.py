"""The bare MULTI/EXISTS/SETBIT/EXEC of a steady mark (``core/transaction.py``), written
straight to a pooled connection: its packing, and the connection it leaves behind when Redis
stalls mid-reply."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
import redis

from django_redis_metrics.core import transaction
from django_redis_metrics.testing import RedisServer


def fresh_keys(count: int, text: str = "k") -> list[str]:
    run = uuid.uuid4().hex[:8]
    return [f"test-transaction:{run}:{text}:{n}" for n in range(count)]


def test_sets_the_bit_in_every_existing_key_and_says_so(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url)
    keys = fresh_keys(3, "aktívne-用户")  # non-ASCII: bulk lengths count encoded bytes
    for key in keys:
        client.setbit(key, 0, 1)
    assert transaction.set_bit_if_present(client, keys, 77) is True
    assert [client.getbit(key, 77) for key in keys] == [1, 1, 1]
    assert client.ping()  # every reply was read: the pooled connection is in step


def test_a_missing_key_is_reported(redis_server: RedisServer) -> None:
    client = redis.Redis.from_url(redis_server.url)
    keys = fresh_keys(2)
    client.setbit(keys[0], 0, 1)
    assert transaction.set_bit_if_present(client, keys, 5) is False
    assert client.get("no such key") is None


def test_keys_are_packed_as_the_client_packs_them(redis_server: RedisServer) -> None:
    """Whatever encoding the client is given, the keys are the ones its own commands name
    (redis-py with hiredis packs str as UTF-8 whatever ``encoding`` says)."""
    client = redis.Redis.from_url(redis_server.url, encoding="latin-1")
    keys = fresh_keys(2, "café")
    for key in keys:
        client.setbit(key, 0, 1)
    assert transaction.set_bit_if_present(client, keys, 9) is True
    assert [client.getbit(key, 9) for key in keys] == [1, 1]


def test_a_reply_that_times_out_leaves_no_stale_reply_on_the_pool(
    redis_server: RedisServer,
) -> None:
    """Redis stalls (CLIENT PAUSE) past the socket timeout mid-transaction: the caller is told
    to go the script's way, and the next command on the pool reads its own reply, not the
    transaction's late one."""
    client = redis.Redis.from_url(redis_server.url, socket_timeout=0.2, retry=None)
    keys = fresh_keys(2)
    for key in keys:
        client.setbit(key, 0, 1)
    redis.Redis.from_url(redis_server.url).client_pause(600)  # every client's commands wait
    assert transaction.set_bit_if_present(client, keys, 3) is None
    time.sleep(0.6)
    client.set(keys[0] + ":after", "mine")
    assert client.get(keys[0] + ":after") == b"mine"
    assert client.ping()


def test_only_a_plain_single_server_client_is_supported(redis_server: RedisServer) -> None:
    client: Any = redis.Redis.from_url(redis_server.url)
    assert transaction.supports(client)
    assert not transaction.supports(client.pipeline())
    assert not transaction.supports(
        redis.Redis.from_url(redis_server.url, single_connection_client=True)
    )


def test_a_resp3_push_between_the_replies_goes_to_the_push_handler(
    redis_server: RedisServer,
) -> None:
    """An invalidation push (client-side caching; maintenance notifications come the same way)
    waiting on the pooled connection before a transaction's replies is handed to the parser's
    push handler, as redis-py's own reading does, and the replies are read in step."""
    client = redis.Redis.from_url(redis_server.url, protocol=3)
    key, tracked = fresh_keys(2)
    client.hset(key, "f", 1)
    pool = client.connection_pool
    connection: Any = pool.get_connection()
    pushes: list[Any] = []
    if not hasattr(connection._parser, "set_invalidation_push_handler"):
        pool.release(connection)
        client.close()
        pytest.skip(
            "this redis-py (5.x) hands no RESP3 push to a handler: it reads them as replies"
        )
    try:
        connection._parser.set_invalidation_push_handler(pushes.append)
        connection.send_command("CLIENT", "TRACKING", "ON")
        assert connection.read_response() in (b"OK", "OK")
        connection.send_command("GET", tracked)
        assert connection.read_response() is None
    finally:
        pool.release(connection)
    other = redis.Redis.from_url(redis_server.url)
    other.set(tracked, "changed")  # the push is sent
    other.close()
    time.sleep(0.05)
    request = transaction.IncrRequest([(key, "f")])
    try:
        assert transaction.send_incr(client, request, 2) == [3]
        assert pushes and pushes[0][0] in (b"invalidate", "invalidate")
        assert client.hget(key, "f") == b"3"  # the connection is in step
    finally:
        client.close()
