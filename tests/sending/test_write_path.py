"""The request-time write path: fail-open on an unreachable cluster, data errors, a full queue,
fork safety and the deduplication of merged marks. (Real faults: ``test_sender_faults.py``.)"""

from __future__ import annotations

import logging
import multiprocessing
import socket
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from django_redis_metrics import Counter, EventSeries, Statistic, UniqueBitmap
from django_redis_metrics.bitmaps import ids as bitmap_ids
from django_redis_metrics.core import connection
from django_redis_metrics.core.batch import Batch, ScriptCall, is_outage
from django_redis_metrics.core.scripts import LuaScript
from django_redis_metrics.middleware import view_names
from django_redis_metrics.sending import failopen, sender
from django_redis_metrics.sending.writes import Submission, Writes, build_batch
from django_redis_metrics.testing import RedisServer

from ..django_site import flushed, signed_in, view_hits, wait_for_a_failure

pytestmark = pytest.mark.django_db
LATENCY = Statistic("latency", labels=("view",))


@pytest.fixture
def site(single: Any, with_middleware: Any) -> Any:
    with_middleware.ROOT_URLCONF = "tests.integration.user_urls"
    return with_middleware


def hits(name: str) -> int:
    return Counter(name).total(86400)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def never_answering() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never replies."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    try:
        yield sock.getsockname()[1]
    finally:
        sock.close()


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.exc_info]


# 1. Redis Cluster that cannot be reached


def test_an_unreachable_cluster_keeps_the_writes_and_warns_once_without_tracebacks(
    with_middleware: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with_middleware.DJANGO_REDIS_METRICS = {
        "CONNECTION": f"redis://127.0.0.1:{free_port()}/0",
        "CLUSTER": True,
        "PREFIX": "down",
        "FAIL_OPEN_TIMEOUT": 0.2,
    }
    with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
        for _ in range(3):
            assert Client().get("/sync/").status_code == 200
        wait_for_a_failure()
        assert not sender.flush(timeout=1)  # kept for when the cluster answers
    assert sender.sender.pending() == 3
    assert "Metrics writes are waiting: Redis at redis://127.0.0.1:" in caplog.text
    assert not tracebacks(caplog)
    assert len(caplog.records) == 1  # one warning for the outage, however many attempts


def test_a_never_answering_cluster_costs_the_requests_nothing(
    with_middleware: Any, never_answering: int
) -> None:
    with_middleware.DJANGO_REDIS_METRICS = {
        "CONNECTION": f"redis://127.0.0.1:{never_answering}/0",
        "CLUSTER": True,
        "PREFIX": "blackhole",
        "FAIL_OPEN_TIMEOUT": 0.2,  # SOCKET_TIMEOUT stays 5 s
    }
    assert Client().get("/sync/").status_code == 200
    wait_for_a_failure()
    assert Client().get("/sync/").status_code == 200  # queued behind the held batch
    assert sender.sender.pending() == 2


# 3. Data errors: every after-callback runs; logged once, not as "dropped"


def test_every_after_callback_runs_when_one_fails(single: Any) -> None:
    UniqueBitmap("seed").mark("alice")  # this PREFIX now holds mapped (str) ids
    batch = Batch()
    UniqueBitmap("active").mark(7, batch=batch)  # refused: int id
    EventSeries("visits").record(batch=batch, page="home")
    with pytest.raises(ValueError, match="one kind of user id"):
        batch.execute()
    assert batch.sent
    assert batch.results[0] is None
    assert isinstance(batch.results[1], int)  # the event's id: its callback ran too
    assert [type(error) for _call, error in batch.errors] == [ValueError]


def test_a_refused_mark_is_logged_once_per_interval_and_not_as_dropped(
    site: Any, alice: User, caplog: pytest.LogCaptureFixture
) -> None:
    UniqueBitmap("seed").mark("someone")  # mapped ids: the middleware's int pk is refused
    client = signed_in(alice)
    with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
        for _ in range(5):
            assert flushed(client.get("/whoami/")).status_code == 200
    assert view_hits("whoami") == 5  # stored
    assert not sender.sender.failures  # not an outage
    assert not tracebacks(caplog)
    assert len(caplog.records) == 1, caplog.text
    assert "dropped" not in caplog.text.lower()
    assert "active_users" in caplog.text and "one kind of user id" in caplog.text


def test_a_key_of_another_type_refuses_its_writes_only_and_is_not_an_outage(
    site: Any, single: Any, caplog: pytest.LogCaptureFixture
) -> None:
    hits = Counter("hits", labels=("view", "status"))
    broken = hits.labels(view="whoami", status="2xx").meta_key
    single.client.set(broken, "not a hash")  # e.g. another app's key under our PREFIX
    client = Client()
    with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
        for _ in range(5):
            assert flushed(client.get("/whoami/")).status_code == 200
    assert LATENCY.labels(view="whoami").totals()["count"] == 5  # the request's other writes
    assert not sender.sender.failures  # refused writes are not retried
    assert not tracebacks(caplog)
    assert len(caplog.records) == 1, caplog.text  # once per interval, not once per request
    assert "WRONGTYPE" in caplog.text and broken in caplog.text
    assert single.client.get(broken) == b"not a hash"


def test_a_batch_of_one_refused_write_is_a_data_error_not_an_outage(
    single: Any, fresh_state: None
) -> None:
    single.client.set(Counter("lonely").meta_key, "not a hash")
    batch = Batch()
    Counter("lonely").incr(batch=batch)
    assert failopen.send(batch.calls) == (None, 0)  # nothing to send again


def test_a_server_refusing_every_write_is_an_outage(
    settings: Any, fresh_state: None, caplog: pytest.LogCaptureFixture
) -> None:
    server = RedisServer().start()
    try:
        settings.DJANGO_REDIS_METRICS = {"CONNECTION": server.url, "PREFIX": "oom"}
        redis_client = server.client()
        redis_client.config_set("maxmemory", 1)  # OOM: no write fits
        batch = Batch()
        Counter("a").incr(batch=batch)
        Counter("b").incr(batch=batch)
        error, _duplicates = failopen.send(batch.calls)
        assert error is not None and is_outage(error)  # the sender keeps the batch
        assert "command not allowed when used memory" in str(error)  # OOM, on 6.2 and 7.0
        assert not redis_client.keys("oom:*")
    finally:
        server.stop()


def test_a_batch_redis_refuses_for_good_is_dropped_and_does_not_block_the_next(
    single: Any, fresh_state: None, caplog: pytest.LogCaptureFixture
) -> None:
    broken = LuaScript("broken", "return +")  # does not compile: SCRIPT LOAD fails, always

    def write(batch: Batch) -> None:
        batch.add(ScriptCall(broken, [Counter("x").meta_key], []))

    writes = Writes()
    writes.defer(write, "broken")
    with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
        assert sender.submit(writes)
        assert sender.flush()
    submit_hit("after_the_broken_one")
    assert sender.flush()
    assert hits("after_the_broken_one") == 1
    assert "Metrics write to a batch could not be prepared and was dropped" in caplog.text


# 4. A full queue


@pytest.mark.parametrize(
    "limit",
    [{"SENDER": {"QUEUE_SIZE": 0}}, {"SEND_QUEUE_SIZE": 0}],  # the flat key still works
    ids=["SENDER", "flat key"],
)
def test_a_full_queue_logs_a_warning_and_counts_what_it_drops(
    single: Any,
    fresh_state: None,
    caplog: pytest.LogCaptureFixture,
    metrics_settings: Any,
    limit: dict[str, Any],
) -> None:
    metrics_settings(**limit)
    before = sender.sender.dropped
    with caplog.at_level(logging.WARNING, logger="django_redis_metrics"):
        for _ in range(5):
            writes = Writes()
            writes.incr("overflow")
            assert not sender.submit(writes)
    assert sender.sender.dropped - before == 5
    assert len(caplog.records) == 1
    assert "Metrics buffer full" in caplog.text


# 5. Fork safety


def _child(url: str, prefix: str, out: Any) -> None:
    from django.conf import settings

    settings.DJANGO_REDIS_METRICS = {"CONNECTION": url, "PREFIX": prefix}
    inherited = sender.sender.pending()  # the parent's queued writes stay the parent's
    writes = Writes()
    writes.incr("forked")
    writes.mark("forked_users", "child-user")  # preparing a str id takes the id cache's lock
    sender.submit(writes)
    sender.flush(5)
    counts = (Counter("forked").total(86400), UniqueBitmap("forked_users").count("day"))
    out.put((inherited, sender.sender.id, *counts))


def test_a_child_forked_while_the_sender_holds_its_locks_does_not_deadlock(
    single: Any, settings: Any, fresh_state: None
) -> None:
    writes = Writes()
    writes.incr("parent")
    sender.submit(writes)
    sender.flush()
    held = [
        sender.sender._lock,
        connection._lock,
        bitmap_ids.id_cache._lock,
        view_names._lock,
    ]
    acquired, release = threading.Event(), threading.Event()

    def busy_sender() -> None:  # what the parent's sender thread holds at worst
        for lock in held:
            lock.acquire()
        acquired.set()
        release.wait(60)
        for lock in held:
            lock.release()

    thread = threading.Thread(target=busy_sender)
    thread.start()
    acquired.wait(10)
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    child = context.Process(target=_child, args=(single.url, single.prefix, out))
    try:
        child.start()
        child.join(20)
        alive = child.is_alive()
        if alive:
            child.kill()
            child.join()
    finally:
        release.set()
        thread.join()
    assert not alive, "the child deadlocked on a lock the parent's thread held at the fork"
    assert child.exitcode == 0
    inherited, child_id, *counts = out.get(timeout=5)
    assert counts == [1, 1]
    assert inherited == 0
    assert child_id != sender.sender.id  # its own numbers: never taken for the parent's


# 6. Marks merged into one batch are deduplicated per local hour


def test_merged_marks_straddling_a_local_midnight_in_a_half_hour_zone_are_kept(
    single: Any, settings: Any, fresh_state: None
) -> None:
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "TIME_ZONE": "Asia/Kolkata",
    }  # UTC+5:30
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    midnight = datetime(yesterday.year, yesterday.month, yesterday.day, 18, 30, tzinfo=UTC)
    before, after = (
        (midnight - timedelta(minutes=10)).timestamp(),
        (midnight + timedelta(minutes=10)).timestamp(),
    )  # same UTC hour, two local days
    submissions = []
    for when in (before, after):
        writes = Writes()
        writes.mark("active_users", 5, when)
        submissions.append(Submission(writes, int(when)))
    build_batch(submissions).execute()
    active = UniqueBitmap("active_users")
    assert active.contains(5, "day", when=before)
    assert active.contains(5, "day", when=after)


# 7. The sender's send delay: merged round trips under load, flush and full batches at once


def submit_hit(name: str) -> None:
    writes = Writes()
    writes.incr(name)
    assert sender.submit(writes)


def wait_for_hits(name: str, expected: int, within: float = 3.0) -> float:
    """Seconds until ``name`` counted ``expected`` hits (polled, no flush)."""
    started = time.monotonic()
    while hits(name) != expected:
        assert time.monotonic() - started < within, f"{hits(name)} hits of {name}"
        time.sleep(0.01)
    return time.monotonic() - started


def test_writes_arriving_within_the_send_delay_share_one_round_trip(
    single: Any, fresh_state: None, monkeypatch: pytest.MonkeyPatch, metrics_settings: Any
) -> None:
    metrics_settings(SENDER={"DELAY": 0.5})
    sender.flush()
    before = sender.sender.round_trips
    for _ in range(5):  # spread out: a sender without a delay sends each one alone
        submit_hit("merged")
        time.sleep(0.02)
    wait_for_hits("merged", 5)
    assert sender.flush()  # the sender counts its round trip once Redis has answered
    assert sender.sender.round_trips - before == 1


def test_writes_reach_redis_within_the_send_delay_without_a_flush(
    single: Any, fresh_state: None, monkeypatch: pytest.MonkeyPatch, metrics_settings: Any
) -> None:
    metrics_settings(SEND_DELAY=0.1)
    submit_hit("unflushed")
    assert wait_for_hits("unflushed", 1) < 2.0


@pytest.fixture
def slow_sender(single: Any, fresh_state: None, metrics_settings: Any) -> Any:
    """A sender that waits a minute before sending unless something cuts the wait short;
    returns ``metrics_settings`` for further changes."""
    metrics_settings(SEND_DELAY=60.0)
    return metrics_settings


def test_flush_sends_at_once_instead_of_waiting_for_the_send_delay(slow_sender: Any) -> None:
    submit_hit("hurried")
    started = time.monotonic()
    assert sender.flush()
    assert time.monotonic() - started < 5.0
    assert hits("hurried") == 1


def test_a_full_batch_is_sent_without_waiting_for_the_send_delay(slow_sender: Any) -> None:
    slow_sender(SEND_BATCH_SIZE=3)
    for _ in range(3):
        submit_hit("full")
    assert wait_for_hits("full", 3) < 5.0


def test_a_flush_that_times_out_still_sends_at_once(slow_sender: Any) -> None:
    submit_hit("impatient")
    sender.flush(timeout=0)
    assert wait_for_hits("impatient", 1) < 5.0


# 8. Refused counter writes leave nothing; declared metrics of one name keep their own settings


def test_a_counter_refused_for_its_meta_key_writes_no_slice(
    backend: Any, fresh_state: None
) -> None:
    counter = Counter("orphan", precisions=[1])
    backend.client.set(counter.meta_key, "not a hash")
    for second in range(3):
        batch = Batch()
        counter.incr(when=1_700_000_000 + second, batch=batch)
        assert failopen.send(batch.calls) == (None, 0)  # refused, not to be sent again
    assert backend.client.exists(counter.key(1)) == 0  # nothing stored, so nothing orphaned


def test_a_slice_holding_a_non_integer_refuses_that_counter_only(
    single: Any, fresh_state: None
) -> None:
    bad = Counter("corrupt", precisions=[60])
    single.client.hset(bad.key(60), 1_700_000_000 // 60 * 60, "abc")
    batch = Batch()
    Counter("fine", precisions=[60]).incr(when=1_700_000_000, batch=batch)
    bad.incr(when=1_700_000_000, batch=batch)
    assert failopen.send(batch.calls) == (None, 0)
    assert Counter("fine", precisions=[60]).total() == 1


def test_declarations_of_one_name_in_one_batch_keep_their_own_configuration(
    single: Any, fresh_state: None
) -> None:
    minutes, seconds = Counter("signups", precisions=[60]), Counter("signups", precisions=[1])
    days = UniqueBitmap("buyers", periods=("day",))
    hours = UniqueBitmap("buyers", periods=("hour", "day"))
    first, second = Writes(), Writes()
    first.incr(minutes)
    second.incr(seconds)
    moment = int(time.time()) - 60  # marks are kept within BITMAP_RETENTION of now
    first.mark(days, 7, moment)
    second.mark(hours, 7, moment)
    batch = build_batch([Submission(first, moment), Submission(second, moment)])
    batch.execute()
    assert seconds.series(1) == [(moment, 1)]
    assert minutes.series(60) == [(moment // 60 * 60, 1)]
    assert hours.count("hour", when=moment) == 1


def test_one_declared_counter_still_merges_with_itself(single: Any, fresh_state: None) -> None:
    declared = Counter("merged_declared", precisions=[60])
    submissions = []
    for _ in range(3):
        writes = Writes()
        writes.incr(declared)
        writes.incr("merged_by_name")
        submissions.append(Submission(writes, 1_700_000_000))
    batch = build_batch(submissions)
    assert len(batch.calls) == 2
    batch.execute()
    assert declared.total() == 3


def test_response_times_of_one_view_and_second_go_in_one_call(
    single: Any, fresh_state: None
) -> None:
    """The sender joins a statistic's values per second: one script call, the same summary."""
    moment = time.time() - 30
    submissions = []
    for value in (12.5, 30.0, 7.25, 99.0):
        writes = Writes()
        writes.record("latency:home", value, moment)
        writes.record("latency:shop", value * 2, moment)
        submissions.append(Submission(writes, int(moment)))
    later = Writes()
    later.record("latency:home", 1.0, moment + 1)
    submissions.append(Submission(later, int(moment) + 1))
    batch = build_batch(submissions)
    assert len(batch.calls) == 3  # home this second, shop this second, home the next
    batch.execute()
    home = Statistic("latency:home").summary(60, when=moment)
    if int(moment) // 60 == int(moment + 1) // 60:
        assert (home["count"], home["sum"], home["min"], home["max"]) == (5, 149.75, 1.0, 99.0)
    assert Statistic("latency:home").totals() == {"count": 5, "sum": 149.75}
    shop = Statistic("latency:shop").summary(60, when=moment)
    assert (shop["count"], shop["sum"], shop["max"]) == (4, 297.5, 198.0)
