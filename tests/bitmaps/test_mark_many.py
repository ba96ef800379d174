"""mark_many against marking one by one, its bounds and its validation; and the fast path of
marks, which must never leave a key without its expiry or its index entry."""

from __future__ import annotations

import random
import time
import uuid
from datetime import datetime
from typing import Any

import pytest
from redis.exceptions import OutOfMemoryError, ResponseError

from django_redis_metrics import Batch, UniqueBitmap
from django_redis_metrics.bitmaps.marking import plan as marking
from django_redis_metrics.bitmaps.marking import steps
from django_redis_metrics.core.periods import Day, Month, Week
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.core.scripts import MetricsRefused

from ..clock import moment
from ..roundtrips import RoundTrips

DAY = 86400


def snapshot(backend: Any) -> dict[str, tuple[bytes, int]]:
    return {k: (backend.client.dump(k), backend.client.pttl(k) > 0) for k in backend.keys()}


def stored(backend: Any, bitmap: UniqueBitmap) -> dict[str, tuple[set[Any], int]]:
    """Every period key of ``bitmap`` (by its part after the bitmap's name): its set bits and
    its expiry; with the members of its index sorted sets."""
    marker = f"{{{bitmap.name}}}:"
    found: dict[str, tuple[set[Any], int]] = {}
    for key in backend.keys():
        _, _, tail = key.partition(marker)
        if not tail or tail.split(":")[0] not in ("day", "week", "month", "index"):
            continue
        if tail.startswith("index:"):
            members = {m.decode() for m in backend.client.zrange(key, 0, -1)}
            found[tail] = (members, 0)
            continue
        raw = backend.client.get(key) or b""
        bits = {i * 8 + b for i, byte in enumerate(raw) for b in range(8) if byte & (128 >> b)}
        found[tail] = (bits, backend.client.pexpiretime(key))
    return found


def random_marks(rng: random.Random, count: int, ids: list[Any]) -> list[tuple[Any, float]]:
    now = time.time()
    return [(rng.choice(ids), now - rng.uniform(0, 40 * DAY)) for _ in range(count)]


def test_mark_many_equals_marking_one_by_one(backend: Any) -> None:
    rng = random.Random(13)
    marks = random_marks(rng, 600, list(range(300)))
    one_by_one, many = UniqueBitmap("one"), UniqueBitmap("many")
    for user, when in marks:
        one_by_one.mark(user, when)
    assert many.mark_many(marks) >= 1
    assert stored(backend, many) == stored(backend, one_by_one)
    assert stored(backend, many)  # days, weeks, months and their indexes
    assert set(UniqueBitmap.objects.names()) == {"one", "many"}
    start = time.time() - 40 * DAY
    assert many.between(start, time.time()).count() == len({user for user, _ in marks})


def test_mark_many_maps_str_and_uuid_ids_as_mark_does(backend: Any) -> None:
    rng = random.Random(14)
    people = [f"user-{i}" for i in range(40)] + [uuid.UUID(int=i) for i in range(10)]
    marks = random_marks(rng, 200, people)
    one_by_one, many = UniqueBitmap("one"), UniqueBitmap("many")
    for user, when in marks:
        one_by_one.mark(user, when)
    many.mark_many(marks)
    assert stored(backend, many) == stored(backend, one_by_one)
    last = many.last(41)
    assert all(user in last for user, _ in marks)
    assert "somebody-else" not in last


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        ((1, 2, 3), TypeError, "pairs"),
        ([7, time.time()], TypeError, "pairs"),
        ((True, None), TypeError, "bool"),
        ((-1, None), ValueError, "MAX_USER_ID"),
        ((2**40, None), ValueError, "MAX_USER_ID"),
        ((3.5, None), TypeError, "user id"),
        ((7, datetime(2026, 1, 1)), ValueError, "naive"),
        ((7, "yesterday"), TypeError, "epoch seconds"),
        (("alice", None), ValueError, "one kind of user id"),
    ],
)
def test_bad_input_anywhere_writes_nothing(
    backend: Any, bad: Any, error: type[Exception], message: str
) -> None:
    active = UniqueBitmap("active")
    active.mark(1)
    before = snapshot(backend)
    marks = [(user, None) for user in range(2000)] + [bad]  # the bad one last: over a call
    with pytest.raises(error, match=message):
        active.mark_many(marks)
    assert snapshot(backend) == before


def test_a_big_input_is_split_into_bounded_calls(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(UniqueBitmap, "MAX_MARKS_PER_CALL", 40)
    monkeypatch.setattr(UniqueBitmap, "CALLS_PER_ROUND_TRIP", 3)
    offsets: list[int] = []
    trips: list[int] = []
    calls_steps = steps.calls_steps  # mark_many sends its calls as steps

    def counting(calls: list[Any], *args: Any, **kwargs: Any) -> Any:
        trips.append(len(calls))
        offsets.extend(int(call.args[1]) for call in calls)
        return calls_steps(calls, *args, **kwargs)

    monkeypatch.setattr(steps, "calls_steps", counting)
    active = UniqueBitmap("active")
    today = time.time()
    yesterday = today - DAY
    marks = [(user, today) for user in range(100)] + [(user, today) for user in range(50)]
    marks += [(user, yesterday) for user in range(1000, 1050)]
    # Today: 100 distinct users in 3 calls; yesterday: 50 in 2 (unless both share no period).
    assert active.mark_many(marks) == 5
    assert sorted(offsets) == [10, 20, 40, 40, 40]
    assert trips == [3, 2]
    assert active.count("day", today) == 100
    assert active.count("day", yesterday) == 50
    assert active.last(2).count() == 150
    assert active.mark_many([]) == 0


@pytest.mark.django_db  # weeks and months Redis no longer holds: the archive
def test_mark_many_gives_every_key_its_expiry_and_keeps_retention(backend: Any) -> None:
    active = UniqueBitmap("active")
    now = time.time()
    active.mark_many([(1, now), (2, now - 3 * DAY), (3, now - 2200 * DAY)])
    today = Day.containing(now)
    for period in (today, today.shift(-3), Week.containing(now), Month.containing(now)):
        keep = {"day": 92, "week": 105, "month": 60}[period.name]
        expected = period.shift(keep).start_ts * 1000
        assert backend.client.pexpiretime(active.key(period)) == pytest.approx(expected, abs=1)
    assert all(backend.client.pttl(k) > 0 for k in backend.keys() if ":bitmap:" in k)
    assert not backend.client.exists(active.key(Day.containing(now - 2200 * DAY)))
    assert active.between(now - 2300 * DAY, now).count() == 2


def test_mark_many_ahead_of_the_redis_clock_is_refused_with_nothing_written(
    backend: Any,
) -> None:
    active = UniqueBitmap("ahead")
    active.mark(1)
    before = snapshot(backend)
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        active.mark_many([(2, None), (3, time.time() + MAX_AHEAD + 60)])
    assert snapshot(backend) == before


def test_a_period_key_lost_under_a_confirmed_bitmap_is_made_again_with_its_expiry(
    backend: Any,
) -> None:
    """The fast path trusts this process's memory of the meta and listing, never of the keys:
    a period key that went away (evicted, deleted) is indexed and given its expiry again."""
    active = UniqueBitmap("evicted")
    active.mark(1)
    active.mark(2)  # the fast path: nothing new
    today = Day.containing(time.time())
    backend.client.delete(active.key(today))
    backend.client.zrem(active.index_key("day"), today.suffix)
    active.mark(3)
    assert backend.client.pttl(active.key(today)) > 0
    assert backend.client.zscore(active.index_key("day"), today.suffix) == int(today.start_ts)
    assert active.count("day") == 1


def test_a_period_key_evicted_alone_is_given_back_its_expiry(backend: Any) -> None:
    """Eviction takes one key and leaves its index entry: the mark that makes the key again
    (its SETBIT on the fast path) must still give it its expiry."""
    active = UniqueBitmap("evicted-alone")
    active.mark(1)
    active.mark(2)
    today = Day.containing(time.time())
    backend.client.delete(active.key(today))  # the index still names today
    active.mark(3)
    assert backend.client.pttl(active.key(today)) > 0
    assert active.count("day") == 1
    active.mark(4)  # and the fast path is taken again afterwards
    assert active.count("day") == 2


def test_a_steady_mark_is_one_transaction_on_a_single_node(
    single: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once confirmed, a mark on one server is a bare MULTI/EXEC, no script: one round trip,
    what bitmapist sends plus one EXISTS."""
    backend = single
    remaining = Day.containing(time.time()).end_ts - time.time()
    if remaining < 90:  # marks within MAX_AHEAD of midnight are checked: wait
        time.sleep(remaining + 1)
    active = UniqueBitmap("steady")
    active.mark(0)
    trips = RoundTrips(monkeypatch)
    backend.client.config_resetstat()
    assert sum(trips.measure(lambda u=u: active.mark(u)) for u in range(1, 11)) == 10
    stats = backend.client.info("commandstats")
    assert "cmdstat_evalsha" not in stats and "cmdstat_eval" not in stats
    assert stats["cmdstat_exec"]["calls"] == 10
    assert stats["cmdstat_setbit"]["calls"] == 30
    assert active.count("day") == 11 and active.count("month") == 11


def test_a_mark_refused_by_redis_on_the_transaction_raises_the_scripts_error(
    backend: Any,
) -> None:
    """A period key of another type makes the transaction fail: the mark then goes the
    script's way and raises its error, as before."""
    active = UniqueBitmap("clash")
    active.mark(0)
    today = Day.containing(time.time())
    backend.client.delete(active.key(today))
    backend.client.rpush(active.key(today), "not a bitmap")
    backend.client.expire(active.key(today), 60)
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        active.mark(1)


def test_a_mark_refused_under_maxmemory_raises_and_leaves_the_connection_usable(
    single: Any,
) -> None:
    active = UniqueBitmap("full")
    active.mark(0)
    active.mark(1)
    single.client.config_set("maxmemory", 1)  # noeviction: the queued SETBITs are refused
    try:
        with pytest.raises(OutOfMemoryError):
            active.mark(2)
    finally:
        single.client.config_set("maxmemory", 0)
    active.mark(3)
    assert [u for u in range(5) if u in active.day()] == [0, 1, 3]


def test_a_mark_on_a_dropped_connection_reconnects_as_before(
    single: Any, redis_server: Any
) -> None:
    active = UniqueBitmap("away")
    active.mark(0)
    active.mark(1)
    single.client.client_kill_filter(_type="normal", skipme=False)  # drops the pooled connection
    active.mark(2)  # redis-py reconnects (retry on a dropped connection)
    assert [u for u in range(5) if u in active.day()] == [0, 1, 2]


def test_a_deleted_bitmap_is_listed_again_by_its_next_mark(backend: Any) -> None:
    active = UniqueBitmap("again")
    active.mark(1)
    active.mark(2)
    active.delete()
    assert UniqueBitmap.objects.names() == []
    active.mark(3)
    assert UniqueBitmap.objects.names() == ["again"]
    assert backend.client.hget(active.meta_key, "periods") == b"day,week,month"


def test_marks_near_a_period_end_read_the_redis_clock(backend: Any) -> None:
    """Within MAX_AHEAD of a period's end (by this process's clock) a mark takes the slow
    path, so a mark into a period that is over still makes cached unions stale."""
    active = UniqueBitmap("late")
    now = time.time()
    yesterday = Day.containing(now - DAY)
    active.mark(1, moment(yesterday, 10, now=now))
    query = active.between(yesterday.start_ts, yesterday.start_ts)
    assert query.count() == 1
    active.mark(2, yesterday.end_ts - 1)  # its period is over: slow path, new generation
    assert query.count() == 2
    context = marking.mark_settings()
    start, end = yesterday.start_ts, yesterday.end_ts
    plan = marking.plan_for("base", active.periods, start, context.zone, context.keep)
    assert marking.needs_checks(plan, start)  # over by now
    assert not marking.needs_checks(plan, start + 10, now=start + 100)  # a day to go
    assert marking.needs_checks(plan, start + 200, now=start + 100)  # stamped ahead
    assert marking.needs_checks(plan, end - MAX_AHEAD, now=end - MAX_AHEAD + 5)  # near its end


def test_cohorts_after_mark_many(backend: Any) -> None:
    active = UniqueBitmap("cohort")
    now = time.time()
    first = Week.containing(now).shift(-3)
    users = [set(range(i, i + 10)) for i in range(4)]
    active.mark_many(
        [(u, moment(first.shift(i), 3600, now=now)) for i, group in enumerate(users) for u in group]
    )
    table = active.cohort("week", start=moment(first, 1, now=now), periods=4)
    assert table == [[len(users[i] & users[j]) for j in range(i, 4)] for i in range(4)]


def test_marks_queued_on_a_batch_share_calls(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Marks of one bitmap now, queued on one batch (the sender's path), join one script call
    (bounded by MAX_MARKS_PER_CALL); a mark that needs checks, or of another bitmap, does not."""
    monkeypatch.setattr(UniqueBitmap, "MAX_MARKS_PER_CALL", 10)
    remaining = Day.containing(time.time()).end_ts - time.time()
    if remaining < 90:  # marks within MAX_AHEAD of midnight are checked one by one: wait
        time.sleep(remaining + 1)
    active, other = UniqueBitmap("active"), UniqueBitmap("other")
    active.mark(0)
    other.mark(0)  # both confirmed by this process: their next marks may take the fast path
    batch = Batch()
    for user in range(1, 26):
        active.mark(user, batch=batch)
        if user == 5:
            other.mark(500, batch=batch)
            active.mark(600, time.time() - 3 * DAY, batch=batch)  # a late mark: checked alone
    assert len(batch.calls) == 5  # active: 10 + 10 + 5 users, other, the late mark
    batch.execute()
    assert active.count("day") == 26
    assert all(user in active.day() for user in range(26))
    assert other.count("day") == 2
    assert 600 in active.last(4) and 600 not in active.day()
