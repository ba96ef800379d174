"""Hostile arguments to the period-keyed kinds' reads: a clear ValueError/TypeError (never an
OverflowError or a decimal error), and ranges that reach absurdly far planned as the few keys
that can hold data."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import date
from decimal import Decimal
from typing import Any

import pytest
from django.utils.safestring import SafeString

from django_redis_metrics import UniqueBitmap, UniqueEstimate
from django_redis_metrics.bitmaps.model import MAX_COHORT_PERIODS
from django_redis_metrics.core.periodic import horizon_day
from django_redis_metrics.core.periods import get_zone

YEAR = 365 * 86400

REFUSED: list[tuple[str, Callable[[UniqueBitmap], Any], type[Exception], str]] = [
    ("month(2**63, 1)", lambda b: b.month(2**63, 1), ValueError, "year must be from 2 to 9998"),
    ("month(2024, NaN)", lambda b: b.month(2024, Decimal("NaN")), TypeError, "month must be"),
    ("month(2024, 13)", lambda b: b.month(2024, 13), ValueError, "month must be from 1 to 12"),
    ("week(True, True)", lambda b: b.week(True, True), TypeError, "bool"),
    ("week(2026, 54)", lambda b: b.week(2026, 54), ValueError, "week must be from 1 to 53"),
    ("cohort 10**7", lambda b: b.cohort("day", None, 10**7), ValueError, "at most 120"),
    ("cohort 2000", lambda b: b.cohort("week", None, 2000), ValueError, "at most 120"),
    (
        "between to 9999-12-31",
        lambda b: b.between(time.time(), date(9999, 12, 31)),
        ValueError,
        "years 2 to 9998",
    ),
    ("last from 0001-01-01", lambda b: b.last(3, when=date(1, 1, 1)), ValueError, "years 2"),
    ("last(0)", lambda b: b.last(0), ValueError, "positive"),
]


@pytest.mark.parametrize(("label", "action", "error", "says"), REFUSED, ids=[r[0] for r in REFUSED])
def test_hostile_arguments_are_clear_errors(
    backend: Any, label: str, action: Callable[[UniqueBitmap], Any], error: type, says: str
) -> None:
    active = UniqueBitmap("active")
    active.mark(1)
    before = sorted(backend.keys())
    with pytest.raises(error, match=says):
        action(active)
    assert sorted(backend.keys()) == before


@pytest.mark.django_db  # weeks and months Redis no longer holds: the archive
def test_ranges_reaching_far_plan_only_the_days_that_can_hold_data(backend: Any) -> None:
    now = time.time()
    active = UniqueBitmap("active")
    for user, ago in ((1, 0), (2, 86400), (3, 2 * 86400), (4, 10 * 86400)):
        active.mark(user, when=now - ago)
    near = active.between(now - 3 * 86400, now)
    started = time.monotonic()
    far = active.between(now - 3 * 86400, now + 500 * YEAR)
    ever = active.between(date(2, 1, 1), date(9998, 12, 31))
    assert time.monotonic() - started < 0.5  # it took 1.57 s (6,011 keys) to plan, and 8 s
    assert far.count() == near.count() == 3
    assert ever.count() == active.last(1_000_000).count() == active.last(2**63).count() == 4
    # Up to the horizon (the end of the month holding tomorrow), as if asked for that range;
    # how many keys that is depends on the weekday and the month's end (7 on a Friday, 27
    # November), never more than a few weeks of days.
    horizon = horizon_day(active.periods, get_zone(), now)
    far_keys = [key for leaf in far.leaves() for key in leaf.keys]
    clipped = active.between(now - 3 * 86400, horizon)
    assert far_keys == [key for leaf in clipped.leaves() for key in leaf.keys]
    assert len(far_keys) <= 20
    # From the oldest day the longest retention allowed keeps (100 years): months, mostly.
    assert sum(len(leaf.keys) for leaf in ever.leaves()) <= 100 * 12 + 5 + 31


@pytest.mark.django_db  # weeks and months Redis no longer holds: the archive
def test_ranges_with_no_day_that_can_hold_data_count_nothing(backend: Any) -> None:
    active = UniqueBitmap("active")
    active.mark(1)
    assert active.between(date(2, 1, 1), date(1000, 1, 1)).count() == 0
    assert active.between(date(9000, 1, 1), date(9998, 12, 31)).count() == 0
    weekly = UniqueBitmap("weekly", periods=("week",))
    weekly.mark(1)
    assert weekly.between(date(2, 1, 1), date(1000, 1, 1)).count() == 0


def test_the_largest_cohort_is_answered(backend: Any) -> None:
    active = UniqueBitmap("active", periods=("day",))
    active.mark(1)
    table = active.cohort("day", None, MAX_COHORT_PERIODS)
    assert len(table) == MAX_COHORT_PERIODS and table[-1] == [1]


def test_a_str_subclass_user_id_is_a_str(backend: Any) -> None:
    active = UniqueBitmap("active")
    active.mark_many([(SafeString("alice"), None), ("bob", None)])
    active.mark(SafeString("carol"))
    today = active.day()
    assert today.count() == 3
    assert "alice" in today and SafeString("bob") in today and "carol" in today


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_estimate_ranges_reaching_far_are_clipped_too(backend: Any) -> None:
    now = time.time()
    visitors = UniqueEstimate("visitors")
    for item in ("a", "b", "c"):
        visitors.add(item, when=now)
    visitors.add(SafeString("d"), when=now - 86400)
    assert visitors.between(now - 86400, date(9998, 12, 31)).count() == 4
    assert visitors.last(2**63).count() == visitors.last(1_000_000).count() == 4
    with pytest.raises(ValueError, match="years 2 to 9998"):
        visitors.between(now, date(9999, 12, 31))
