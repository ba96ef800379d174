"""TLS and ACL users: a redis-server of this module's own that speaks only TLS (a CA of its own,
a certificate for 127.0.0.1), reached by ``rediss://`` as a user whose ACL is exactly what
docs/operations.md says the app needs. Every kind writes and reads, the async API, the sender
and ``clean_metrics`` work; a key outside the prefix or a missing rule gives an error that
names the rules to grant."""

from __future__ import annotations

import asyncio
import io
import logging
import subprocess
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import pytest
import redis
from django.core.management import call_command
from redis.backoff import NoBackoff
from redis.exceptions import NoPermissionError
from redis.retry import Retry

from django_redis_metrics import (
    Counter,
    EventSeries,
    Gauge,
    MissingPermission,
    Statistic,
    UniqueBitmap,
    UniqueEstimate,
)
from django_redis_metrics.core import aio, server_clock
from django_redis_metrics.core.connection import (
    ACL_RULES,
    CLUSTER_ACL_RULES,
    get_redis_connection,
    reset_connections,
)
from django_redis_metrics.sending import sender
from django_redis_metrics.sending.writes import Writes
from django_redis_metrics.testing import RedisClusterServers, redis_server_binary
from django_redis_metrics.testing.tls import (
    Certificates,
    TLSRedisServer,
    make_certificates,
    openssl_available,
)

from ..clock import next_second

PREFIX = "site"
PASSWORD = "s3cret/pw"  # a slash: the URL must quote it
#: The app's user, with the rules the docs give; and users each missing one of them.
USERS = {
    "metrics": f"~{PREFIX}:* {ACL_RULES}",
    "no_scripts": f"~{PREFIX}:* {ACL_RULES.replace(' +evalsha +eval +script|load', '')}",
    "no_time": f"~{PREFIX}:* {ACL_RULES.replace(' +time', '')}",
    # The rule the docs gave before transactions were asked for: everything still works.
    "no_transactions": f"~{PREFIX}:* {ACL_RULES.replace(' +multi +exec', '')}",
    "elsewhere": f"~other:* {ACL_RULES}",
}

pytestmark = pytest.mark.skipif(not openssl_available(), reason="needs the openssl command")


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("tls"))


def knows_tls(binary: str) -> bool:
    """Whether ``binary`` was built with TLS: one without it calls ``tls-port`` a bad
    directive, one with it only complains of the value."""
    found = subprocess.run(
        [binary, "--tls-port", "not-a-port"], capture_output=True, text=True, timeout=10
    )
    return "Bad directive" not in found.stdout + found.stderr


@pytest.fixture(scope="module")
def tls_server(certificates: Certificates) -> Iterator[TLSRedisServer]:
    users = [
        f"{name} on >{PASSWORD} resetkeys resetchannels {rules}" for name, rules in USERS.items()
    ]
    try:
        server = TLSRedisServer(certificates, users=users)
        server.start()
    except RuntimeError as error:  # pragma: no cover - a redis-server built without TLS
        # Only a binary that does not know the TLS directives is a reason to skip; a server
        # that started but could not be reached (a certificate refused) is a failure.
        if knows_tls(redis_server_binary()):
            raise
        pytest.skip(f"{redis_server_binary()} was built without TLS: {error}")
    yield server
    server.cleanup()


def use(settings: Any, server: TLSRedisServer, user: str) -> None:
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": server.url_for(user, PASSWORD),
        "PREFIX": PREFIX,
    }
    reset_connections()


@pytest.fixture
def as_metrics_user(
    settings: Any, tls_server: TLSRedisServer, fresh_state: None
) -> Iterator[TLSRedisServer]:
    use(settings, tls_server, "metrics")
    yield tls_server
    reset_connections()


def test_the_server_speaks_only_tls_with_its_own_ca(tls_server: TLSRedisServer) -> None:
    once = {"socket_timeout": 0.5, "retry": Retry(NoBackoff(), 0)}
    plain = redis.Redis(host="127.0.0.1", port=tls_server.port, **once)
    with pytest.raises(redis.ConnectionError):
        plain.ping()
    untrusting = redis.Redis(host="127.0.0.1", port=tls_server.port, ssl=True, **once)
    with pytest.raises(redis.ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
        untrusting.ping()
    assert tls_server.client().ping()


def test_every_kind_writes_and_reads_as_the_limited_user(
    as_metrics_user: TLSRedisServer,
) -> None:
    client: Any = get_redis_connection()
    assert client.connection_pool.connection_kwargs["username"] == "metrics"
    now = time.time()
    Counter("signups").incr(2)
    orders = EventSeries("orders", index=["type"])
    orders.record(type="purchase", total="9.90")
    active = UniqueBitmap("active")
    active.mark(42)
    active.mark(43)
    visitors = UniqueEstimate("visitors")
    visitors.add("bob")
    latency = Statistic("latency")
    latency.record(12.5)
    queue = Gauge("queue")
    queue.set(7)
    assert Counter("signups").total(86400) == 2
    assert orders.count(now - 60, now + 60) == 1
    assert orders.count_by("type", now - 60, now + 60) == {"purchase": 1}
    assert active.count("day") == 2
    assert 42 in active.between(now - 86400, now)
    assert visitors.count("day") == 1
    assert latency.summary(60)["max"] == 12.5
    assert queue.get() == 7
    keys = [key.decode() for key in as_metrics_user.client().scan_iter(count=1000)]
    assert keys and all(key.startswith(f"{PREFIX}:") for key in keys)


@pytest.mark.parametrize("user", ["metrics", "no_transactions"])
def test_steady_writes_count_once_with_or_without_transactions(
    settings: Any, tls_server: TLSRedisServer, fresh_state: None, user: str
) -> None:
    """Repeated writes take the transactions' fast paths; a user refused ``MULTI`` (whose
    commands then each run alone) must not have them sent again by the script."""
    use(settings, tls_server, user)
    name = f"steady_{user}"
    now = time.time()
    counter, orders = Counter(name), EventSeries(name, index=["type"])
    active = UniqueBitmap(name)
    loop = asyncio.new_event_loop()
    try:
        for i in range(5):
            counter.incr()
            loop.run_until_complete(counter.aincr())
            orders.record(type="ab"[i % 2])
            active.mark(i % 3)
        assert counter.total(86400) == 10
        assert loop.run_until_complete(counter.atotal(86400)) == 10
        events = orders.between(now - 60, now + 60)
        assert len(events) == 5 and len({event["id"] for event in events}) == 5
        assert orders.count_by("type", now - 60, now + 60) == {"a": 3, "b": 2}
        assert active.count("day") == 3
    finally:
        loop.run_until_complete(aio.aclose_connections())
        loop.close()
        reset_connections()


def test_a_live_counter_opens_its_slices_as_transactions_as_the_limited_user(
    as_metrics_user: TLSRedisServer,
) -> None:
    """The opening path reads the Redis clock and version with a script call (``INFO`` is not
    in the documented rule): once warmed up, a new second's increment sends no script."""
    counter = Counter("opening_limited", precisions=[1, 60], samples=5)
    admin = as_metrics_user.client()

    def scripts() -> int:
        stats = admin.info("commandstats")
        return int(stats.get("cmdstat_evalsha", {}).get("calls", 0))

    server_clock.forget()  # read afresh below, serving the whole test
    for _ in range(2):  # the script, then the script with the clock known
        next_second()
        counter.incr()
    before = scripts()
    for _ in range(2):
        next_second()
        counter.incr()
    assert scripts() == before
    assert counter.lifetime_total() == 4


def test_the_async_api_and_the_sender_work_as_the_limited_user(
    as_metrics_user: TLSRedisServer,
) -> None:
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(Counter("async_hits").aincr(3))
        assert loop.run_until_complete(Counter("async_hits").atotal(86400)) == 3
        loop.run_until_complete(aio.aclose_connections())
    finally:
        loop.close()
    writes = Writes()
    writes.incr("sent")
    assert sender.submit(writes)
    assert sender.flush()
    assert sender.sender.failures == 0
    assert Counter("sent").total(86400) == 1


@pytest.mark.django_db(transaction=True)  # clean_metrics archives
def test_clean_metrics_runs_as_the_limited_user(as_metrics_user: TLSRedisServer) -> None:
    Counter("cleaned").incr()
    EventSeries("cleaned_events").record(kind="x")
    stray = f"{PREFIX}:tmp:{{cleaned}}:bitmap:lost"  # a query's temporary key left with no TTL
    as_metrics_user.client().set(stray, b"\x01")
    out = io.StringIO()
    call_command("clean_metrics", stdout=out)
    assert "counter: checked " in out.getvalue()
    assert "counter: checked 0," not in out.getvalue()
    assert "1 stray ones" in out.getvalue()
    assert as_metrics_user.client().ttl(stray) > 0
    assert Counter("cleaned").total(86400) == 1


@pytest.mark.parametrize(
    ("user", "denied"),
    [
        ("no_scripts", "'evalsha' command"),
        ("no_time", "can't run this command"),
        ("elsewhere", "access one of the keys"),
    ],
)
def test_a_missing_permission_names_the_rules_to_grant(
    settings: Any, tls_server: TLSRedisServer, fresh_state: None, user: str, denied: str
) -> None:
    use(settings, tls_server, user)
    # An estimate's add always reads the server's clock (TIME); a counter's only at times.
    visitors = UniqueEstimate("denied")
    try:
        with pytest.raises(MissingPermission) as raised:
            visitors.add("bob")
        message = str(raised.value)
        assert denied in message
        assert f"~{PREFIX}:* {ACL_RULES}" in message
        with pytest.raises(MissingPermission):
            EventSeries("denied").record(kind="x")
        loop = asyncio.new_event_loop()
        try:
            with pytest.raises(MissingPermission):
                loop.run_until_complete(visitors.aadd("bob"))
            loop.run_until_complete(aio.aclose_connections())
        finally:
            loop.close()
    finally:
        reset_connections()


def test_the_sender_logs_a_denied_write_and_goes_on(
    settings: Any,
    tls_server: TLSRedisServer,
    fresh_state: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    use(settings, tls_server, "no_time")
    try:
        with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
            UniqueEstimate("denied").add("bob", defer=True)
            assert sender.flush()
        assert "+time" in caplog.text  # the rules to grant, in the log
        assert sender.sender.failures == 0  # not an outage: nothing is held or retried
    finally:
        reset_connections()


@pytest.mark.django_db(transaction=True)  # clean_metrics archives
def test_on_redis_cluster_the_user_needs_the_slot_map_and_restore(settings: Any) -> None:
    def cluster_as(rules: str) -> RedisClusterServers:
        user = f"metrics on >{PASSWORD} resetkeys ~{PREFIX}:* resetchannels {rules}"
        return RedisClusterServers(masters=3, options=["--user", *user.split()]).start()

    servers = cluster_as(f"{ACL_RULES} {CLUSTER_ACL_RULES}")
    try:
        url = f"redis://metrics:{quote(PASSWORD, safe='')}@127.0.0.1:{servers.nodes[0].port}/0"
        settings.DJANGO_REDIS_METRICS = {"CONNECTION": url, "CLUSTER": True, "PREFIX": PREFIX}
        reset_connections()
        now = time.time()

        def union(first: str, second: str) -> int:
            def days(name: str) -> Any:
                return UniqueBitmap(name).between(now - 86400, now)

            return int((days(first) | days(second)).count())

        for name in ("a", "b", "c", "d"):  # one id far out: a sparse bitmap, copied by RESTORE
            UniqueBitmap(name).mark(3_000_000)
        assert union("a", "b") == 1
        Counter("hits").incr()
        call_command("clean_metrics", stdout=io.StringIO())
        for node in servers.masters:  # and without RESTORE, Redis's error names it
            node.client().execute_command("ACL", "SETUSER", "metrics", "-restore")
        reset_connections()
        with pytest.raises(NoPermissionError, match="'restore' command"):
            union("c", "d")
    finally:
        reset_connections()
        servers.stop()
