"""``record()`` one by one as a bare transaction (``events/fast.py``): it writes what the script
writes, and whatever Redis disagrees with (a key deleted, of another type, a value gone from
its set, a new cached size, the series deleted and started again elsewhere) is taken back and
recorded by the script, nothing counted twice, no id given twice."""

from __future__ import annotations

import math
import multiprocessing
import threading
import time
from typing import Any

import pytest
import redis

from django_redis_metrics import EventSeries, MetricsRefused
from django_redis_metrics.events import fast
from django_redis_metrics.events.keys import OTHER_VALUE

KINDS = ("a", "b", "c")


def commands(client: Any) -> dict[str, int]:
    """Calls per command since the last CONFIG RESETSTAT (the private test server's)."""
    return {k[8:]: v["calls"] for k, v in client.info("commandstats").items()}


def warm(series: EventSeries, now: float, n: int = 40) -> list[int]:
    """Records until the process holds a block of ids and knows every kind."""
    return [series.record(now - 30 + i * 0.01, kind=KINDS[i % 3], n=i) for i in range(n)]


def fields(series: EventSeries, now: float) -> list[tuple[Any, ...]]:
    return sorted((e["timestamp"], e["kind"], e["n"]) for e in series.between(now - 60, now))


def test_steady_records_go_as_transactions_and_write_what_the_script_writes(
    single: Any,
) -> None:
    now = time.time()
    ours, scripted = EventSeries("ours", index=["kind"]), EventSeries("script", index=["kind"])
    scripted.TRANSACTIONS = False  # type: ignore[misc]
    warm(ours, now), warm(scripted, now)
    single.client.config_resetstat()
    ids = [ours.record(now - 20 + i * 0.01, kind=KINDS[i % 3], n=40 + i) for i in range(200)]
    calls = commands(single.client)
    assert calls["exec"] >= 190 and calls.get("evalsha", 0) <= 10  # the script reserves blocks
    assert len(set(ids)) == 200
    for i in range(200):
        scripted.record(now - 20 + i * 0.01, kind=KINDS[i % 3], n=40 + i)
    assert fields(ours, now) == fields(scripted, now)
    keys = single.keys()
    mine = {k.split("{ours}")[1] for k in keys if "{ours}" in k and ":e:" not in k}
    theirs = {k.split("{script}")[1] for k in keys if "{script}" in k and ":e:" not in k}
    assert mine == theirs == {":seq", ":time", ":meta", ":values:kind", ":by:kind:a",
                              ":by:kind:b", ":by:kind:c"}  # fmt: skip
    assert sum(":e:" in k for k in keys) == 480
    assert ours.event_key(ids[-1]) in keys
    assert ours.count_by("kind", now - 60, now) == scripted.count_by("kind", now - 60, now)
    assert ours.counts(now - 60, now, 10) == scripted.counts(now - 60, now, 10)
    client = single.client
    for key in [k for k in keys if "{" in k]:  # every key of a series has its TTL
        assert client.pttl(key) > 0, key
    event = client.pttl(ours.event_key(ids[-1]))
    assert 2.9 * ours.retention * 1000 < event <= 3 * ours.retention * 1000


def test_a_deleted_key_is_taken_back_and_recorded_by_the_script(single: Any) -> None:
    now = time.time()
    series = EventSeries("deleted", index=["kind"])
    warm(series, now)
    single.client.delete(series.time_key)  # everything before it no longer indexed
    single.client.config_resetstat()
    new = series.record(now - 1, kind="a", n=-1)
    assert commands(single.client)["evalsha"] == 2  # take back, then the script
    assert [e["id"] for e in series.between(now - 60, now)] == [new]
    after = [series.record(now - 0.5 + i * 0.01, kind="b", n=i) for i in range(20)]
    assert series.count(now - 60, now) == 21 and len({new, *after}) == 21


def test_a_key_of_another_type_refuses_the_record_with_nothing_written(single: Any) -> None:
    now = time.time()
    series = EventSeries("typed", index=["kind"])
    warm(series, now)
    client = single.client
    client.delete(series.index_key("kind", "a"))
    client.set(series.index_key("kind", "a"), "not a sorted set")
    before = {k: client.dump(k) for k in single.keys()}
    seq = client.get(series.key("seq"))
    with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
        series.record(now - 1, kind="a", n=-1)
    assert {k: client.dump(k) for k in single.keys()} == before
    assert int(client.get(series.key("seq"))) >= int(seq)  # ids are never given twice
    assert series.record(now - 1, kind="b", n=-2) > 0


def test_a_value_gone_from_its_set_goes_by_the_script_and_the_cap(single: Any) -> None:
    now = time.time()
    series = EventSeries("capped", index=["kind"], max_values=3)
    warm(series, now)
    client = single.client
    client.delete(series.index_key("kind", "c"))  # as when its events expired: gone from
    client.srem(series.values_key("kind"), "c")  # its values set, another value took its room
    client.sadd(series.values_key("kind"), "z")
    series.record(now - 1, kind="c", n=-1)
    assert not client.exists(series.index_key("kind", "c"))
    assert client.zcard(series.index_key("kind", OTHER_VALUE)) == 1
    assert b"c" not in client.smembers(series.values_key("kind"))


def test_values_beyond_the_cap_keep_going_to_the_overflow(single: Any) -> None:
    now = time.time()
    series = EventSeries("overflow", index=["kind"], max_values=2)
    for i in range(30):
        series.record(now - 10 + i * 0.01, kind=KINDS[i % 3], n=i)
    assert series.count_by("kind", now - 60, now) == {"a": 10, "b": 10, OTHER_VALUE: 10}


def test_a_new_cached_window_size_is_invalidated_by_a_late_event(single: Any) -> None:
    now = time.time()
    series = EventSeries("cached", index=["kind"])
    warm(series, now)
    start, end = now - 50, now - 1
    assert series.counts(start, end, 7) == series.counts(start, end, 7, cache=False)
    assert single.client.zcard(series.cache_key(7)) > 0
    for i in range(5):  # into closed windows cached before this process knew the size
        series.record(now - 25 + i, kind="a", n=100 + i)
        assert series.counts(start, end, 7) == series.counts(start, end, 7, cache=False)
    assert series.count(start, end) == 45


def test_the_series_deleted_and_started_again_elsewhere_never_merges_events(
    single: Any,
) -> None:
    now = time.time()
    series = EventSeries("again", index=["kind"])
    warm(series, now, 10)  # this process holds ids past 10
    other = EventSeries("again", index=["kind"])
    other.TRANSACTIONS = False  # type: ignore[misc]  # another process, recording by the script
    other.preen_before(math.inf, drop=True)  # deleted there: the id counter starts again
    theirs = [other.record(now - 5 + i * 0.01, kind="b", n=1000 + i) for i in range(40)]
    assert theirs == list(range(1, 41))
    mine = [series.record(now - 4 + i * 0.01, kind="a", n=2000 + i) for i in range(40)]
    more = [other.record(now - 3 + i * 0.01, kind="c", n=3000 + i) for i in range(40)]
    assert len({*theirs, *mine, *more}) == 120
    found = series.between(now - 60, now)
    assert len(found) == 120
    expected = [*range(1000, 1040), *range(2000, 2040), *range(3000, 3040)]
    assert sorted(e["n"] for e in found) == expected
    assert series.count_by("kind", now - 60, now) == {"a": 40, "b": 40, "c": 40}
    assert all(set(e) == {"id", "timestamp", "kind", "n"} for e in found)  # nothing merged


def test_delete_forgets_the_block(single: Any) -> None:
    now = time.time()
    series = EventSeries("deleted again", index=["kind"])
    warm(series, now)
    series.delete()
    assert series.record(now - 1, kind="a", n=0) == 1  # a new series starts again at 1
    assert series.count(now - 60, now) == 1


def test_ahead_and_expired_events_are_judged_by_the_script(single: Any) -> None:
    now = time.time()
    series = EventSeries("clock", index=["kind"], retention=3600)
    warm(series, now)
    with pytest.raises(MetricsRefused, match="ahead"):
        series.record(now + 600, kind="a", n=-1)
    series.record(now - 7200, kind="a", n=-2)  # older than the retention: not stored
    assert series.count(now - 3000, now) == 40 and not series.between(now - 7201, now - 7199)


def _child(url: str, prefix: str, now: float, out: Any) -> None:
    from django.conf import settings

    settings.DJANGO_REDIS_METRICS = {"CONNECTION": url, "PREFIX": prefix}
    series = EventSeries("forked", index=["kind"])
    out.put([series.record(now - 20 + i * 0.01, kind=KINDS[i % 3], n=i) for i in range(300)])


def test_two_processes_get_distinct_ids_and_lose_nothing(single: Any) -> None:
    now = time.time()
    series = EventSeries("forked", index=["kind"])
    warm(series, now, 10)  # the children must not write from the parent's block
    context = multiprocessing.get_context("fork")
    out = context.Queue()
    children = [
        context.Process(target=_child, args=(single.url, single.prefix, now, out)) for _ in range(2)
    ]
    for child in children:
        child.start()
    ids = [out.get(timeout=60) for _ in children]
    for child in children:
        child.join(10)
        assert child.exitcode == 0
    parent = [series.record(now - 10, kind="a", n=-1)]
    assert len({*ids[0], *ids[1], *parent}) == 601
    assert series.count(now - 60, now) == 611
    assert series.count_by("kind", now - 60, now) == {"a": 205, "b": 203, "c": 203}


def test_threads_of_one_process_share_its_blocks(single: Any) -> None:
    now = time.time()
    series = EventSeries("threads", index=["kind"])
    warm(series, now, 10)
    found: list[list[int]] = []

    def write(k: int) -> None:
        found.append([series.record(now - 20 + i * 0.01, kind="a", n=i) for i in range(100)])

    threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({i for ids in found for i in ids}) == 400
    assert series.count(now - 60, now) == 410


def test_forget_all_sends_the_next_record_by_the_script(single: Any) -> None:
    now = time.time()
    series = EventSeries("forgotten", index=["kind"])
    warm(series, now)
    fast.forget_all()
    single.client.config_resetstat()
    series.record(now - 1, kind="a", n=-1)
    assert commands(single.client)["evalsha"] == 1
