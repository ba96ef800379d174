"""What a counter's increments work out once (counter/plan.py) and the fast path's cheaper
reading: the fold bound follows the server's own ``hash-max-listpack-entries``, a plan follows
the settings and the series it is for, the fast path's instants are exactly its slices', and
the transaction's replies are read the same from every kind of connection."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest
from django.test import override_settings

from django_redis_metrics import Counter
from django_redis_metrics.core import cleaning, transaction
from django_redis_metrics.core.batch import Batch
from django_redis_metrics.core.connection import get_redis_connection, reset_connections
from django_redis_metrics.counter import fast
from django_redis_metrics.counter.plan import FOLD_SLICES, write_plan

T0 = 1_700_000_040  # a fixed epoch second, a multiple of 60, far behind any clock


def scripts_sent(backend: Any) -> int:
    """Script calls that ran since the last CONFIG RESETSTAT (not those refused NOSCRIPT)."""
    stats = backend.client.info("commandstats").get("cmdstat_evalsha")
    return 0 if stats is None else stats["calls"] - stats["failed_calls"]


@pytest.fixture
def listpack_entries(single: Any) -> Any:
    """Sets the server's ``hash-max-listpack-entries`` for one test, then restores it (each
    client reads it once: the readings are forgotten before and after)."""
    client = single.client
    original = client.config_get("hash-max-listpack-entries")["hash-max-listpack-entries"]
    cleaning._listpack_cache.clear()

    def set_to(value: int) -> None:
        client.config_set("hash-max-listpack-entries", value)
        cleaning._listpack_cache.clear()

    yield set_to
    client.config_set("hash-max-listpack-entries", original)
    cleaning._listpack_cache.clear()


@pytest.mark.parametrize(("entries", "block"), [(130, 10), (512, FOLD_SLICES), (100, 1)])
def test_a_fold_covers_what_the_servers_listpack_setting_keeps_compact(
    single, listpack_entries, entries, block
):
    """With 120 samples, a server keeping 130 entries compact takes 10 one-second slices a
    call, Redis' default 512 takes ``FOLD_SLICES`` (not the 392 it would keep compact: a call
    opening more costs the server more per increment), a server keeping fewer than the samples
    one slice a call; the hash stays compact wherever the setting allows it."""
    listpack_entries(entries)
    counter = Counter(f"bound{entries}", precisions=[1], samples=120)
    start = T0 // (10 * FOLD_SLICES) * (10 * FOLD_SLICES)  # a multiple of every block here
    seconds = 3 * block if block > 1 else 5
    counter.incr(when=start - 1)  # the script loaded
    single.client.config_resetstat()
    with Batch() as batch:
        for second in range(seconds):
            counter.incr(when=start + second, batch=batch)
    assert scripts_sent(single) == (3 if block > 1 else 5)
    assert write_plan(counter, get_redis_connection()).block == block
    kept = min(seconds, 120)
    assert counter.series(1)[-kept:] == [(start + s, 1) for s in range(seconds - kept, seconds)]
    if entries > 120:
        assert single.client.object("encoding", counter.key(1)) == b"listpack"


def test_a_plan_follows_the_settings_and_the_series(single, settings):
    counter = Counter("planned", precisions=[1, 60])
    counter.incr(when=T0)
    client = get_redis_connection()
    plan = write_plan(counter, client)
    assert write_plan(counter, client) is plan
    elsewhere = f"{single.prefix}x"
    with override_settings(
        DJANGO_REDIS_METRICS={**settings.DJANGO_REDIS_METRICS, "PREFIX": elsewhere}
    ):
        moved = write_plan(counter, get_redis_connection())
        assert moved is not plan and moved.keys[0].startswith(f"{elsewhere}:")
        counter.incr(when=T0)
        assert counter.series(1) == [(T0, 1)]
    assert counter.series(1) == [(T0, 1)]  # each prefix holds its own increment
    labelled = Counter("planned_by", labels=("view",))
    home = labelled.labels(view="home")
    home.incr(when=T0)
    away = labelled.labels(view="away")  # a copy of the family's configuration
    away.incr(when=T0)
    assert write_plan(away, client).name == away.name != home.name
    assert away.series(1) == home.series(1) == [(T0, 1)]


def test_the_fast_path_covers_exactly_the_instants_of_its_slices(single):
    """Precisions of 2 and 3 seconds: after a script call opened the slices of T0, T0 + 1.99
    still falls in both (a transaction), T0 + 2 opens a 2-second slice (the script)."""
    counter = Counter("instants", precisions=[2, 3])
    counter.incr(when=T0)
    single.client.config_resetstat()
    counter.incr(when=T0 + 1.99)
    assert scripts_sent(single) == 0
    counter.incr(when=T0 + 2)
    assert scripts_sent(single) == 1
    counter.incr(when=T0 + 2.5)  # the slices T0 + 2 and T0 (3 s): opened by that call
    counter.incr(when=T0 + 3)  # a new 3-second slice
    assert scripts_sent(single) == 2
    assert counter.series(2) == [(T0, 2), (T0 + 2, 3)]
    assert counter.series(3) == [(T0, 4), (T0 + 3, 1)]


@pytest.mark.parametrize("protocol", [2, 3])
def test_replies_are_read_alike_over_either_protocol(single, settings, protocol):
    """RESP3's replies go through the parser; RESP2's are taken from the hiredis reader, which
    answers redis-py's not-enough-data marker until the whole reply has arrived."""
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "CONNECTION": f"{single.url}?protocol={protocol}",
    }
    try:
        counter = Counter(f"resp{protocol}", precisions=[1, 60])
        counter.incr(when=T0)
        single.client.config_resetstat()
        for _ in range(3):
            counter.incr(5, when=T0)
        assert scripts_sent(single) == 0
        assert counter.series(1) == [(T0, 16)] and counter.lifetime_total() == 16
    finally:
        reset_connections()


def test_replies_are_read_alike_without_a_parser(single):
    """A connection that hides its parser (as a client-side caching proxy does) is read by
    ``read_response``: the same EXEC reply, an error reply returned rather than raised."""
    client = single.client
    client.hset("plain", "f", 1)
    request = transaction.IncrRequest([("plain", "f")])
    pool = client.connection_pool
    connection = pool.get_connection()
    try:

        class Hidden:
            def read_response(self) -> Any:
                return connection.read_response()

        connection.send_packed_command([request.request(connection, 2)])
        assert transaction.read_replies(Hidden(), 3)[-1] == [3]
        connection.send_packed_command(
            [b"".join(connection.pack_command("HINCRBY", "plain", "f", "x"))]
        )
        assert "not an integer" in str(transaction.read_replies(Hidden(), 1)[-1])
    finally:
        pool.release(connection)


def test_a_counter_that_wrote_still_pickles_and_copies(single):
    counter = Counter("kept", precisions=[1, 60])
    counter.incr(when=T0)
    for twin in (pickle.loads(pickle.dumps(counter)), copy.deepcopy(counter)):
        assert "_write_plan" not in vars(twin) and twin == counter
        twin.incr(when=T0)
    assert counter.series(1) == [(T0, 3)]


def test_forgotten_slices_go_by_the_script_again(single):
    counter = Counter("forgotten", precisions=[1])
    counter.incr(when=T0)
    fast.forget_all()
    single.client.config_resetstat()
    counter.incr(when=T0)
    assert scripts_sent(single) == 1
    counter.incr(when=T0)
    assert scripts_sent(single) == 1
    assert counter.series(1) == [(T0, 3)]
