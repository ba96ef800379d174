"""Labelled estimates: each series added to apart, the estimate counted as the union of its
series, on the single node and on the Redis Cluster (where every series has its own slot).

A HyperLogLog union keeps each register's maximum, so the union of the series' HyperLogLogs is
the very HyperLogLog of every item added: counts are checked exactly against a plain estimate
that received every add (the *mirror*), and within the estimate's error against Python sets.
"""

from __future__ import annotations

import time
import uuid
from collections import defaultdict
from datetime import date, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Batch, UniqueEstimate
from django_redis_metrics.core.keys import catalogue_key
from django_redis_metrics.core.labels.admission import answers
from django_redis_metrics.core.periods import Day, get_zone
from django_redis_metrics.estimates import unite as estimate_unite
from django_redis_metrics.estimates.bounds import MAX_COUNT_KEYS
from django_redis_metrics.sending import sender

from ..asyncio_helpers import run
from ..clock import moment
from ..roundtrips import Rounds, RoundTrips, nodes_of

PLANS = ("free", "pro", "team")
DAY = 86400


def local_day(when: float) -> date:
    return datetime.fromtimestamp(when, get_zone()).date()


def close(count: int, exact: int) -> bool:
    """Within the error of a HyperLogLog this small (0.81 % standard error)."""
    return abs(count - exact) <= 1 + exact // 25


def temporaries(backend: Any) -> list[str]:
    return [k for k in backend.keys() if ":tmp:" in k]


adds_strategy = st.lists(
    st.tuples(
        st.sampled_from(PLANS),
        st.one_of(st.integers(0, 80), st.sampled_from(["a", "b", "é", "x-1"])),
        st.integers(0, 20),
        st.integers(0, DAY - 1),
    ),
    max_size=40,
)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(adds=adds_strategy, span=st.tuples(st.integers(0, 20), st.integers(0, 20)))
def test_a_labelled_estimate_counts_the_union_of_its_series(
    backend: Any, adds: list[Any], span: tuple[int, int]
) -> None:
    now = time.time()
    token = uuid.uuid4().hex[:8]
    visitors = UniqueEstimate(f"visitors-{token}", labels=("plan",))
    mirror = UniqueEstimate(f"mirror-{token}")
    model: dict[str, set[tuple[str, date]]] = defaultdict(set)
    today = Day.containing(now)
    for plan, item, back, second in adds:
        when = moment(today.shift(-back), second, now=now)
        visitors.labels(plan=plan).add(item, when)
        mirror.add(item, when)
        model[plan].add((str(item), local_day(when)))
    everyone = set().union(*model.values())
    for period in ("day", "week", "month"):
        for when in (now, now - 10 * DAY):
            assert visitors.count(period, when) == mirror.count(period, when)
    day = local_day(now)
    assert close(visitors.count("day", now), len({i for i, d in everyone if d == day}))
    first, last = sorted(day - timedelta(days=back) for back in span)
    exact = {item for item, d in everyone if first <= d <= last}
    count = visitors.between(first, last).count()
    assert count == mirror.between(first, last).count()
    assert close(count, len(exact))
    assert UniqueEstimate(visitors.name).between(first, last).count() == count  # undeclared
    pro = {item for item, d in model["pro"] if first <= d <= last}
    assert close(visitors.labels(plan="pro").between(first, last).count(), len(pro))
    assert temporaries(backend) == []


def test_many_series_are_united_in_bounded_steps(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(estimate_unite, "UNITE_GROUP", 16)  # several groups on Redis Cluster
    monkeypatch.setattr(estimate_unite, "IMPORTS_PER_CALL", 5)
    now = time.time()
    visitors = UniqueEstimate("crowd", labels=("shard",), max_series=100)
    mirror = UniqueEstimate("mirror")
    shards = MAX_COUNT_KEYS + 6  # more keys than one PFCOUNT reads, on a single node
    for shard in range(shards):
        for item in (f"only-{shard}", f"shared-{shard % 9}"):
            visitors.labels(shard=shard).add(item, now)
            mirror.add(item, now)
    assert visitors.count("day", now) == mirror.count("day", now)
    assert close(visitors.count("day", now), shards + 9)
    assert visitors.last(3).count() == mirror.last(3).count()
    assert temporaries(backend) == []


def test_an_estimate_without_series_counts_in_one_round_trip(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    plain = UniqueEstimate("plain")
    labelled = UniqueEstimate("labelled", labels=("plan",))
    plain.add("a", now)
    labelled.labels(plan="pro").add("a", now)
    series = labelled.labels(plan="pro")
    trips, rounds = RoundTrips(monkeypatch), Rounds(monkeypatch)
    for estimate in (plain, series):
        assert rounds(lambda e=estimate: e.count("day", now)) == 1
        assert rounds(lambda e=estimate: e.last(20).count()) == 1
    nodes = nodes_of(backend.client, catalogue_key("estimate"), plain.meta_key)
    assert trips(lambda: plain.count("day", now)) == nodes  # its series listed on the way
    assert trips(lambda: series.count("day", now)) == 1
    if not backend.cluster:  # the series listed with the first count, theirs in one more
        assert trips(lambda: labelled.count("day", now)) == 2
        assert trips(lambda: labelled.last(20).count()) == 2
    assert labelled.count("day", now) == plain.count("day", now) == 1


def test_adds_to_series_go_through_batches_and_deferral(backend: Any, fresh_state: None) -> None:
    answers.clear()
    now = time.time()
    visitors = UniqueEstimate("visitors", labels=("plan",), max_series=2)
    with Batch() as batch:
        visitors.labels(plan="free").add("a", now, batch=batch)
        visitors.labels(plan="pro").add("b", now, batch=batch)
    visitors.labels(plan="pro").add("c", now, defer=True)
    visitors.labels(plan="team").add("d", now, defer=True)  # refused in the sender's thread
    assert sender.flush()
    run(lambda: visitors.labels(plan="free").aadd("e", now))
    assert visitors.count("day", now) == 5
    assert visitors.labels(plan="pro").count("day", now) == 2
    assert visitors.other_series().count("day", now) == 1  # "team" came past max_series
    assert not visitors.labels(plan="team").exists()


def test_async_counts_unite_the_series_as_the_sync_ones(backend: Any) -> None:
    now = time.time()
    visitors = UniqueEstimate("visitors", labels=("plan",))

    async def main() -> Any:
        for item in range(12):
            await visitors.labels(plan=PLANS[item % 3]).aadd(item, now)
        return (
            await visitors.acount("day", now),
            await visitors.last(3).acount(),
            await visitors.labels(plan="pro").acount("day", now),
        )

    assert run(main) == (12, 12, 4)
    assert visitors.count("day", now) == 12


def test_a_labelled_estimate_refuses_adds_under_its_own_name(single: Any) -> None:
    visitors = UniqueEstimate("visitors", labels=("plan",))
    for write in (
        lambda: visitors.add("a"),
        lambda: visitors.add("a", defer=True),
        lambda: run(lambda: visitors.aadd("a")),
    ):
        with pytest.raises(TypeError, match=r"write to one of its series, e\.g\. \.labels"):
            write()
    assert single.keys() == []


def test_a_dropped_plain_count_leaves_no_temporary_key(backend: Any) -> None:
    # An estimate holding adds of its own over more days than one PFCOUNT reads, and series
    # (its labels declared later): the first step of its plain count merges a chunk of days.
    now = time.time()
    daily = UniqueEstimate("daily", periods=("day",))
    days = MAX_COUNT_KEYS + 6
    for back in range(days):
        daily.add(back, moment(Day.containing(now).shift(-back), 60, now=now))
    labelled = UniqueEstimate("daily", periods=("day",), labels=("plan",))
    labelled.labels(plan="pro").add("new", now)
    assert close(daily.last(days).count(), days + 1)
    assert temporaries(backend) == []


def test_deleting_a_labelled_estimate_deletes_its_series(backend: Any) -> None:
    now = time.time()
    visitors, kept = UniqueEstimate("visitors", labels=("plan",)), UniqueEstimate("visitors2")
    for item, plan in enumerate(PLANS):
        visitors.labels(plan=plan).add(item, now)
    kept.add(1, now)
    visitors.delete()
    assert visitors.count("day", now) == 0
    assert UniqueEstimate.objects.names() == ["visitors2"]
    assert not [k for k in backend.keys() if "{visitors\x1f" in k]
