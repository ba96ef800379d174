"""Labelled bitmaps: each series marked apart, the bitmap read as the union of its series (counts,
ranges, operators, membership, retention tables), against Python sets of the marks, on the
single node and on the Redis Cluster (where every series has its own slot)."""

from __future__ import annotations

import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Batch, UniqueBitmap
from django_redis_metrics.bitmaps import bounds
from django_redis_metrics.bitmaps import query as bitmap_query
from django_redis_metrics.bitmaps.ids import id_kind_key
from django_redis_metrics.core.keys import catalogue_key
from django_redis_metrics.core.labels.admission import answers
from django_redis_metrics.core.labels.labelling import OTHER, OVERFLOW_FIELD, split
from django_redis_metrics.core.periods import Day, get_zone
from django_redis_metrics.sending import sender

from ..asyncio_helpers import run
from ..clock import moment
from ..roundtrips import Rounds, RoundTrips, nodes_of
from .test_bitmaps import ScriptSources

PLANS = ("free", "pro", "team")
COUNTRIES = ("fr", "de")
DAY = 86400

Model = dict[tuple[str, str], set[tuple[int, date]]]


def local_day(when: float) -> date:
    return datetime.fromtimestamp(when, get_zone()).date()


def users(marks: set[tuple[int, date]], keep: Callable[[date], bool]) -> set[int]:
    return {user for user, day in marks if keep(day)}


SAME: dict[str, Callable[[date, date], bool]] = {
    "day": lambda a, b: a == b,
    "week": lambda a, b: a.isocalendar()[:2] == b.isocalendar()[:2],
    "month": lambda a, b: (a.year, a.month) == (b.year, b.month),
}


def mark_all(bitmap: UniqueBitmap, marks: list[Any], now: float) -> Model:
    """Mark each (plan, country, user, days back, second of the day) in its series."""
    model: Model = defaultdict(set)
    today = Day.containing(now)
    for plan, country, user, back, second in marks:
        when = moment(today.shift(-back), second, now=now)
        bitmap.labels(plan=plan, country=country).mark(user, when)
        model[plan, country].add((user, local_day(when)))
    return model


def temporaries(backend: Any) -> list[str]:
    """Temporary keys left behind (cached unions of finished periods excepted)."""
    return [k for k in backend.keys() if ":tmp:" in k and ":cache:" not in k]


marks_strategy = st.lists(
    st.tuples(
        st.sampled_from(PLANS),
        st.sampled_from(COUNTRIES),
        st.integers(0, 60),
        st.integers(0, 20),
        st.integers(0, DAY - 1),
    ),
    max_size=30,
)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(marks=marks_strategy, span=st.tuples(st.integers(0, 20), st.integers(0, 20)))
def test_a_labelled_bitmap_reads_as_the_union_of_its_series(
    backend: Any, marks: list[Any], span: tuple[int, int]
) -> None:
    now = time.time()
    active = UniqueBitmap(f"active-{uuid.uuid4().hex[:8]}", labels=("plan", "country"))
    model = mark_all(active, marks, now)
    everyone = set().union(*model.values())
    for period, same in SAME.items():
        for when in (now, now - 10 * DAY):
            chosen = local_day(when)
            expected = users(everyone, lambda d, w=chosen, s=same: s(d, w))
            assert active.count(period, when) == len(expected)
    today = local_day(now)
    first, last = sorted(today - timedelta(days=back) for back in span)
    in_range = users(everyone, lambda d: first <= d <= last)
    query = active.between(first, last)
    assert query.count() == len(in_range)
    assert UniqueBitmap(active.name).between(first, last).count() == len(in_range)  # undeclared
    for user in range(0, 61, 6):
        assert (user in query) == (user in in_range)
        assert active.contains(user, "day", now) == (user in users(everyone, today.__eq__))
    pro = active.labels(plan="pro", country="fr")
    pro_users = users(model["pro", "fr"], lambda d: first <= d <= last)
    assert pro.between(first, last).count() == len(pro_users)  # a series reads its own keys
    assert (query - pro.between(first, last)).count() == len(in_range - pro_users)
    assert (query & pro.between(first, last)).count() == len(pro_users)
    recent = users(everyone, lambda d: d >= today - timedelta(days=2))
    assert (query ^ active.last(3)).count() == len(in_range ^ recent)
    assert temporaries(backend) == []


def test_a_labelled_bitmap_combines_with_a_plain_one(backend: Any) -> None:
    now = time.time()
    active = UniqueBitmap("active", labels=("plan",))
    buyers = UniqueBitmap("buyers")
    for user in range(20):
        active.labels(plan=PLANS[user % 3]).mark(user, now)
    for user in range(10, 30):
        buyers.mark(user, now)
    assert (active.day(now) & buyers.day(now)).count() == 10
    assert (buyers.day(now) - active.day(now)).count() == 10  # the plain bitmap first
    assert (active.last(7) | buyers.last(7)).count() == 30
    assert 25 in (active.day(now) | buyers.day(now))
    assert 25 not in (active.day(now) & buyers.day(now))
    assert temporaries(backend) == []


def test_a_labelled_retention_table_is_that_of_the_union(backend: Any) -> None:
    now = time.time()
    active = UniqueBitmap("active", periods=("day",), labels=("plan",))
    today = Day.containing(now)
    days: list[set[int]] = [set(), set(), set(), set()]
    for back, group in enumerate(([1, 2, 3, 4], [2, 3, 9], [3, 4, 9, 10], [1, 9])):
        for user in group:
            plan = PLANS[(user + back) % 3]  # a user in several series over the days
            active.labels(plan=plan).mark(user, moment(today.shift(back - 3), 60, now=now))
            days[back].add(user)
    table = active.cohort("day", start=today.shift(-3).start_ts, periods=4)
    assert table == [[len(days[i] & days[j]) for j in range(i, 4)] for i in range(4)]
    assert temporaries(backend) == []


def test_many_series_are_united_in_bounded_steps(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    # More series than a group, than one script reads; 40 day keys each, more than one reads.
    active = UniqueBitmap("crowd", periods=("day",), labels=("shard",), max_series=100)
    count = bounds.UNITE_GROUP + 8
    for shard in range(count):
        for user in (shard, 1000 + shard % 7):
            active.labels(shard=shard).mark(user, now)
    sources = ScriptSources(monkeypatch)
    assert active.count("day", now) == count + 7
    assert active.last(40).count() == count + 7
    assert 1003 in active.last(40) and 999 not in active.last(40)
    assert sources.most <= bounds.MAX_SCRIPT_SOURCES
    assert temporaries(backend) == []


def test_a_bitmap_without_series_reads_in_one_round_trip(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    plain = UniqueBitmap("plain", periods=("day", "week"))
    labelled = UniqueBitmap("labelled", periods=("day", "week"), labels=("plan",))
    plain.mark(1, now)
    labelled.labels(plan="pro").mark(1, now)
    series = labelled.labels(plan="pro")
    # (read, whether it reads the PREFIX's kind of ids too: `in` and contains, in its slot)
    reads: list[tuple[Callable[[UniqueBitmap], object], bool]] = [
        (lambda b: b.count("day", now), False),
        (lambda b: b.last(3).count(), False),
        (lambda b: b.contains(1, "week", now), True),
        (lambda b: 1 in b.between(now - 3 * DAY, now), True),
        (lambda b: b.cohort("day", now - 2 * DAY, 3), False),
    ]
    for read, _ in reads:
        read(plain), read(series)  # scripts loaded on their nodes
    trips, rounds = RoundTrips(monkeypatch), Rounds(monkeypatch)
    for read, ids in reads:
        extra = [id_kind_key()] if ids else []
        listed = nodes_of(backend.client, catalogue_key("bitmap"), plain.meta_key, *extra)
        assert rounds(lambda r=read: r(plain)) == 1
        assert rounds(lambda r=read: r(series)) == 1  # a series reads its own keys
        assert trips(lambda r=read: r(plain)) == listed  # its series listed on the way
        assert trips(lambda r=read: r(series)) == nodes_of(backend.client, series.meta_key, *extra)
    if not backend.cluster:  # the series listed with the first read, theirs in one more
        assert trips(lambda: labelled.count("day", now)) == 2
        assert trips(lambda: labelled.last(3).count()) == 2
    assert labelled.count("day", now) == plain.count("day", now) == 1


def test_writes_to_series_go_through_batches_deferral_and_imports(
    backend: Any, fresh_state: None
) -> None:
    answers.clear()
    now = time.time()
    active = UniqueBitmap("active", labels=("plan",))
    with Batch() as batch:
        active.labels(plan="free").mark(1, now, batch=batch)
        active.labels(plan="pro").mark(2, now, batch=batch)
    active.labels(plan="pro").mark(3, now, defer=True)
    active.labels(plan="team").mark(4, now, defer=True)  # admitted in the sender's thread
    assert sender.flush()
    calls = active.labels(plan="team").mark_many([(5, now), (6, now - DAY)])
    assert calls >= 1
    run(lambda: active.labels(plan="free").amark(7, now))
    assert active.count("day", now) == 6
    assert active.last(2).count() == 7
    assert [active.labels(plan=p).count("day", now) for p in PLANS] == [2, 2, 2]
    listed = backend.client.zrangebylex(catalogue_key("bitmap"), "[active\x1f", "[active\x1f\xff")
    assert sorted(split(m.decode()).label_dict()["plan"] for m in listed) == sorted(PLANS)


def test_async_reads_unite_the_series_as_the_sync_ones(backend: Any) -> None:
    now = time.time()
    active = UniqueBitmap("active", labels=("plan",))

    async def main() -> Any:
        for user in range(12):
            await active.labels(plan=PLANS[user % 3]).amark(user, now)
        return (
            await active.acount("day", now),
            await active.last(3).acount(),
            await active.acontains(5, "day", now),
            await active.day(now).acontains(13),
            await active.labels(plan="pro").acount("day", now),
        )

    assert run(main) == (12, 12, True, False, 4)
    assert active.count("day", now) == 12


def test_a_labelled_bitmap_refuses_marks_under_its_own_name(single: Any) -> None:
    active = UniqueBitmap("active", labels=("plan",))
    for write in (
        lambda: active.mark(1),
        lambda: active.mark(1, defer=True),
        lambda: active.mark_many([(1, None)]),
        lambda: run(lambda: active.amark(1)),
    ):
        with pytest.raises(TypeError, match=r"write to one of its series, e\.g\. \.labels"):
            write()
    assert single.keys() == []


def test_the_cap_sends_further_label_sets_to_other_which_the_union_holds(
    backend: Any, fresh_state: None
) -> None:
    answers.clear()
    now = time.time()
    active = UniqueBitmap("capped", labels=("plan",), max_series=2)
    barrier = threading.Barrier(4)

    def writer(k: int) -> None:
        barrier.wait()
        for user in range(10 * k, 10 * k + 10):
            active.labels(plan=f"p{k}").mark(user, now)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    active.labels(plan="late").mark(99, now, defer=True)  # refused in the sender's thread
    assert sender.flush()
    bounds_of_series = ("[capped\x1f", "[capped\x1f\xff")
    listed = [
        split(m.decode())
        for m in backend.client.zrangebylex(catalogue_key("bitmap"), *bounds_of_series)
    ]
    admitted = [s.label_dict()["plan"] for s in listed if not s.other]
    assert len(admitted) == 2 and any(s.other for s in listed)
    other = active.other_series()
    assert other.name == f"capped\x1f{OTHER}"
    assert other.count("day", now) == 2 * 10 + 1
    assert active.count("day", now) == 41
    assert sum(active.labels(plan=p).count("day", now) for p in admitted) == 20
    assert int(backend.client.hget(other.meta_key, OVERFLOW_FIELD)) == 3


def test_a_dropped_plain_read_leaves_no_temporary_key(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bitmap that holds marks of its own and has series (its labels were declared later):
    # the first request of its plain read builds a union, then the series are found.
    monkeypatch.setattr(bitmap_query, "MAX_SCRIPT_SOURCES", 2)
    now = time.time()
    active = UniqueBitmap("active", periods=("day",))
    for back in range(5):
        active.mark(back, moment(Day.containing(now).shift(-back), 60, now=now))
    UniqueBitmap("active", periods=("day",), labels=("plan",)).labels(plan="pro").mark(9, now)
    assert active.last(5).count() == 6
    assert temporaries(backend) == []


def test_deleting_a_labelled_bitmap_deletes_its_series(backend: Any) -> None:
    now = time.time()
    active, kept = UniqueBitmap("active", labels=("plan",)), UniqueBitmap("active2")
    for user, plan in enumerate(PLANS):
        active.labels(plan=plan).mark(user, now)
    kept.mark(1, now)
    active.delete()
    assert active.count("day", now) == 0
    assert UniqueBitmap.objects.names() == ["active2"]
    assert not [k for k in backend.keys() if "{active\x1f" in k and backend.client.pttl(k) == -1]
