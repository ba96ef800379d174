"""Retention between two bitmaps (``cohort(returning=other)``): the users of one bitmap in each
period found in another 1, 2, ... periods later, against Python sets of the marks, plain and
labelled, on the single node and on the Redis Cluster (where the two live in different slots)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import UniqueBitmap
from django_redis_metrics.bitmaps.model import MAX_COHORT_PERIODS
from django_redis_metrics.core.periods import Day

from ..asyncio_helpers import run
from ..clock import moment
from ..roundtrips import RoundTrips, nodes_of
from .test_bitmaps_labels import temporaries

DAYS = 5
PLANS = ("free", "pro")

#: (which bitmap: 0 signed up, 1 bought; user; days back; plan)
marks_strategy = st.lists(
    st.tuples(
        st.integers(0, 1), st.integers(0, 40), st.integers(0, DAYS - 1), st.sampled_from(PLANS)
    ),
    max_size=60,
)


def expected_table(sets: list[list[set[int]]]) -> list[list[int]]:
    """Row i: the users of ``sets[0][i]``, then how many of them are in ``sets[1][j]``, j > i."""
    first, later = sets
    return [
        [len(first[i]), *(len(first[i] & later[j]) for j in range(i + 1, len(first)))]
        for i in range(len(first))
    ]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(marks=marks_strategy, labelled=st.tuples(st.booleans(), st.booleans()))
def test_a_two_bitmap_table_equals_the_sets(
    backend: Any, marks: list[Any], labelled: tuple[bool, bool]
) -> None:
    now = time.time()
    token = uuid.uuid4().hex[:8]
    bitmaps = [
        UniqueBitmap(f"{role}-{token}", periods=("day",), labels=("plan",) if lab else ())
        for role, lab in zip(("signed", "bought"), labelled, strict=True)
    ]
    today = Day.containing(now)
    sets: list[list[set[int]]] = [[set() for _ in range(DAYS)] for _ in bitmaps]
    for which, user, back, plan in marks:
        bitmap = bitmaps[which]
        target = bitmap.labels(plan=plan) if bitmap.label_names else bitmap
        target.mark(user, moment(today.shift(-back), 60, now=now))
        sets[which][DAYS - 1 - back].add(user)
    start = today.shift(-(DAYS - 1)).start_ts
    table = bitmaps[0].cohort("day", start, DAYS, returning=bitmaps[1])
    assert table == expected_table(sets)
    assert run(lambda: bitmaps[0].acohort("day", start, DAYS, returning=bitmaps[1])) == table
    assert temporaries(backend) == []


def test_returning_itself_is_the_plain_table(backend: Any) -> None:
    now = time.time()
    active = UniqueBitmap("active", periods=("day",))
    today = Day.containing(now)
    for back, users in enumerate(([1, 2, 3], [2, 3, 4], [3, 5])):
        for user in users:
            active.mark(user, moment(today.shift(back - 2), 60, now=now))
    start = today.shift(-2).start_ts
    assert active.cohort("day", start, 3, returning=active) == active.cohort("day", start, 3)
    assert active.cohort("day", start, 3) == [[3, 2, 1], [3, 1], [2]]


def test_a_plain_pair_costs_one_round_trip_on_a_single_node(
    single: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = time.time()
    signed, bought = UniqueBitmap("signed", periods=("day",)), UniqueBitmap("bought")
    signed.mark(1, now), bought.mark(1, now)
    signed.cohort("day", None, 4, returning=bought)  # scripts loaded
    trips = RoundTrips(monkeypatch)
    assert trips(lambda: signed.cohort("day", None, 4, returning=bought)) == nodes_of(
        single.client, signed.meta_key
    )
    assert trips(lambda: signed.cohort("day", None, 4)) == 1  # as before
    labelled = UniqueBitmap("labelled", periods=("day",), labels=("plan",))
    labelled.labels(plan="pro").mark(1, now)
    signed.cohort("day", None, 4, returning=labelled)
    # its series listed with the table, then their unions built, read and unlinked
    assert trips(lambda: signed.cohort("day", None, 4, returning=labelled)) == 4


def test_the_largest_pair_table_is_answered(backend: Any) -> None:
    now = time.time()
    signed, bought = UniqueBitmap("signed", periods=("day",)), UniqueBitmap("b", periods=("day",))
    signed.mark(7, now)
    bought.mark(7, now)
    table = signed.cohort("day", None, MAX_COHORT_PERIODS, returning=bought)
    assert len(table) == MAX_COHORT_PERIODS and table[-1] == [1]
    assert sum(map(len, table)) == MAX_COHORT_PERIODS * (MAX_COHORT_PERIODS + 1) // 2
    assert temporaries(backend) == []


@pytest.mark.parametrize(
    ("returning", "periods", "error", "message"),
    [
        ("bought", 8, TypeError, "returning must be a UniqueBitmap"),
        (3, 8, TypeError, "returning must be a UniqueBitmap"),
        (UniqueBitmap("weekly", periods=("week",)), 8, ValueError, "keeps no day keys"),
        (UniqueBitmap("ok", periods=("day",)), MAX_COHORT_PERIODS + 1, ValueError, "at most"),
        (UniqueBitmap("ok", periods=("day",)), 0, ValueError, "periods"),
    ],
)
def test_bad_input_is_refused_before_anything_is_read(
    backend: Any, returning: Any, periods: int, error: type[Exception], message: str
) -> None:
    signed = UniqueBitmap("signed", periods=("day",))
    with pytest.raises(error, match=message):
        signed.cohort("day", None, periods, returning=returning)
    assert backend.keys() == []
