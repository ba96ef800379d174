"""UniqueEstimate counts within its error of the truth (Python sets), per period and over
ranges covered by the fewest keys still retained; items normalise to one text per item."""

from __future__ import annotations

import enum
import time
import uuid
from datetime import date
from typing import Any

import pytest
from django.db.models import IntegerChoices, TextChoices

from django_redis_metrics import Batch, UniqueEstimate
from django_redis_metrics.core.keys import catalogue_key
from django_redis_metrics.core.periods import Day, Month, Period, Week
from django_redis_metrics.estimates.query import MAX_COUNT_KEYS

from ..clock import moment
from ..roundtrips import Rounds, nodes_of

DAY = 86400
#: The issue's bound: within 2 % of the truth (HyperLogLog's standard error is 0.81 %).
TOLERANCE = 0.02


def add_all(estimate: UniqueEstimate, items: Any, when: float) -> None:
    """Many adds, 1000 script calls per round trip (each add is still its own atomic call)."""
    batch = Batch()
    for number, item in enumerate(items, 1):
        estimate.add(item, when, batch=batch)
        if number % 1000 == 0:
            batch.execute()
            batch = Batch()
    batch.execute()


def assert_close(estimate: int, truth: int) -> None:
    assert abs(estimate - truth) <= TOLERANCE * truth, (estimate, truth)


def test_20000_distinct_items_in_a_day_are_counted_within_2_percent(backend: Any) -> None:
    visitors = UniqueEstimate("visitors")
    now = time.time()
    items = [f"session-{n}" for n in range(20_000)]
    add_all(visitors, items + items[:5000], now)  # repeats do not count again
    for period in ("day", "week", "month"):
        assert_close(visitors.count(period), 20_000)
    assert_close(visitors.between(now, now).count(), 20_000)
    assert visitors.count("day", now - 40 * DAY) == 0


def test_a_range_of_weeks_with_overlapping_items_matches_the_union_of_sets(backend: Any) -> None:
    visitors = UniqueEstimate("visitors")
    now = time.time()
    today = Day.containing(now)
    days = [today.shift(-offset) for offset in range(34, 0, -1)]
    truth: dict[Period, set[int]] = {}
    for number, day in enumerate(days):
        items = range(number * 700, number * 700 + 2500)  # each day shares items with the next 3
        truth[day] = set(items)
        add_all(visitors, items, moment(day, 3600, now=now))
    for first, last in [(0, 33), (3, 20), (10, 16), (0, 6), (27, 33)]:
        union = set().union(*(truth[d] for d in days[first : last + 1]))
        query = visitors.between(days[first].start_ts, days[last].end_ts - 1)
        assert_close(query.count(), len(union))
    for week in {Week.containing(d.start_ts) for d in days}:
        union = set().union(*(truth[d] for d in days if d.start_ts in week))
        assert_close(visitors.count(week), len(union))


def test_between_reads_months_then_weeks_then_days(backend: Any, settings: Any) -> None:
    estimate = UniqueEstimate("v")
    days = [Day.of(date(2026, 10, 20)).shift(i) for i in range(30)]
    now = Day.of(date(2026, 11, 20)).start_ts
    cover = estimate._cover(days, now)  # type: ignore[arg-type]
    assert [p.key_part for p in cover] == [
        *(f"day:2026-10-{d}" for d in range(20, 26)),
        "week:2026-W44",
        "week:2026-W45",
        "week:2026-W46",
        *(f"day:2026-11-{d}" for d in range(16, 19)),
    ]
    whole = [Day.of(date(2026, 11, 1)).shift(i) for i in range(36)]  # Nov 1 - Dec 6
    later = Day.of(date(2026, 12, 10)).start_ts
    assert [p.key_part for p in estimate._cover(whole, later)] == [  # type: ignore[arg-type]
        "month:2026-11",
        "week:2026-W49",
    ]
    for offset in range(60):  # any 30 consecutive days: at most 12 keys
        window = [days[0].shift(offset + i) for i in range(30)]
        assert len(estimate._cover(window, later + 90 * DAY)) <= 12  # type: ignore[arg-type]
    daily = UniqueEstimate("daily", periods=("day",))
    assert len(daily._cover(days, now)) == 30  # type: ignore[arg-type]
    weekly = UniqueEstimate("weekly", periods=("week",))
    with pytest.raises(ValueError, match="keeps no day keys"):
        weekly._cover(days, now)  # type: ignore[arg-type]


def test_between_falls_back_to_finer_keys_past_a_coarse_retention(
    backend: Any, metrics_settings: Any
) -> None:
    estimate = UniqueEstimate("v")
    whole = [Day.of(date(2026, 11, 1)).shift(i) for i in range(36)]  # Nov 1 - Dec 6
    later = Day.of(date(2026, 12, 10)).start_ts
    metrics_settings(ESTIMATE_RETENTION={"month": 1})  # November's key is gone by Dec 10
    assert [p.key_part for p in estimate._cover(whole, later)] == [  # type: ignore[arg-type]
        "day:2026-11-01",
        *(f"week:2026-W{w}" for w in range(45, 50)),
    ]
    metrics_settings(ESTIMATE_RETENTION={"month": 1, "week": 3, "day": 30})
    # Weeks W45-W47 are gone; their days too, but for Nov 11-29 (30 days back from Dec 10).
    assert [p.key_part for p in estimate._cover(whole, later)] == [  # type: ignore[arg-type]
        *(f"day:2026-11-{d}" for d in range(11, 23)),
        "week:2026-W48",
        "week:2026-W49",
    ]


def test_the_query_reads_the_planned_keys_in_one_pfcount(
    backend: Any, round_trips: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    visitors = UniqueEstimate("visitors")
    now = time.time()
    month = Month.containing(now).prev
    visitors.add(1, month.start_ts)
    visitors.add(2, now)
    query = visitors.between(month.start_ts, now)
    assert query.keys[0] == f"{backend.prefix}:estimate:{{visitors}}:month:{month.suffix}"
    assert query.keys == [visitors.key(p) for p in query.periods]
    assert len(query.keys) <= 1 + 4 + 6  # a month, its weeks and days at most
    # The series listing rides along: on Redis Cluster the catalogue's node may be another,
    # asked in the same round (one more packet, no more waiting).
    assert Rounds(monkeypatch)(query.count) == 1
    assert round_trips(query.count) == nodes_of(
        backend.client, catalogue_key("estimate"), visitors.meta_key
    )
    assert query.count() == 2


def test_a_long_range_is_counted_in_bounded_steps(backend: Any) -> None:
    daily = UniqueEstimate("daily", periods=("day",))
    today = Day.containing(time.time())
    truth: set[int] = set()
    for offset in range(90):
        items = range(offset * 30, offset * 30 + 100)
        truth.update(items)
        add_all(daily, items, today.shift(-offset).start_ts)
    query = daily.last(90)
    assert len(query.keys) == 90 > MAX_COUNT_KEYS
    assert_close(query.count(), len(truth))
    assert query.count() == daily.between(today.shift(-89).start_ts, time.time()).count()
    assert not [k for k in backend.keys() if ":tmp:" in k]  # the temporary union is gone


class Plan(IntegerChoices):
    PRO = 5, "Pro"


class Level(enum.IntEnum):
    GOLD = 7


class Colour(TextChoices):
    RED = "red", "Red"


def test_items_are_counted_by_their_text(backend: Any) -> None:
    items = UniqueEstimate("items")
    user = uuid.UUID("12345678-1234-5678-1234-567812345678")
    same = (5, "5", Plan.PRO, 7, Level.GOLD, user, str(user), "red", Colour.RED, -3, 2**64 - 1)
    for item in same:
        items.add(item)
    # 5, 7, the UUID, "red", -3 and 2**64 - 1: an int and its digits are one item, an
    # IntEnum counts by its value, a UUID by its canonical str, a TextChoices by its value.
    assert items.count("day") == 6
    items.add(user.hex)  # another text: another item
    items.add("5 ")
    assert items.count("day") == 8


def test_objects_exists_and_delete(backend: Any) -> None:
    visitors = UniqueEstimate("visitors", periods=("hour", "day"))
    assert not visitors.exists()
    now = time.time()
    visitors.add("a", now)
    visitors.add("b", now - 3 * DAY)
    assert visitors.exists()
    assert UniqueEstimate.objects.names() == ["visitors"]
    stored = UniqueEstimate.objects.get("visitors")
    assert stored == visitors and stored.periods == ("hour", "day")
    assert UniqueEstimate.objects.all()[0].periods == ("hour", "day")
    with pytest.raises(LookupError, match="No unique estimate named 'nope'"):
        UniqueEstimate.objects.get("nope")
    visitors.delete()
    assert backend.keys() == []
    assert not visitors.exists()
    assert UniqueEstimate.objects.names() == []
    assert visitors.count("day") == 0


def test_count_names_a_kept_period(backend: Any) -> None:
    visitors = UniqueEstimate("visitors")
    with pytest.raises(ValueError, match="keeps no hour keys; it keeps day, week, month"):
        visitors.count("hour")
    with pytest.raises(ValueError, match="Unknown period 'year'"):
        visitors.count("year")
    with pytest.raises(ValueError, match="periods must name at least one period"):
        UniqueEstimate("x", periods=())
    with pytest.raises(TypeError, match="sequence of period names"):
        UniqueEstimate("x", periods="day")
    assert UniqueEstimate("x", periods=("month", "day")).periods == ("day", "month")
    with pytest.raises(ValueError, match="end must not be before start"):
        visitors.between(time.time(), time.time() - 2 * DAY)
    with pytest.raises(ValueError, match="days must be positive"):
        visitors.last(0)


@pytest.mark.django_db  # periods Redis no longer holds: the archive
def test_a_range_reaching_back_past_every_retention_plans_only_retained_keys(backend: Any) -> None:
    daily = UniqueEstimate("daily", periods=("day",))
    now = time.time()
    daily.add(1, now)
    daily.add(2, now - 5 * DAY)
    query = daily.between(0, now)  # from 1970: only the 92 days kept are planned
    assert [p.key_part for p in query.periods] == [
        f"day:{Day.containing(now).shift(-i).suffix}" for i in range(91, -1, -1)
    ]
    assert query.count() == 2
    assert daily.between(0, 365 * DAY).periods == ()
    assert daily.between(0, 365 * DAY).count() == 0
    weekly = UniqueEstimate("weekly", periods=("week",))
    weekly.add(3, now)
    assert weekly.between(0, Week.containing(now).end_ts - 1).count() == 1
