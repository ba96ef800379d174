"""Retention at write time: marks keep only the periods BITMAP_RETENTION keeps, every key has
its expiry; integer ids are bounded by MAX_USER_ID; refused marks leave the keyspace as it was."""

from __future__ import annotations

import enum
import time
from functools import partial
from typing import Any

import pytest
from django.db.models import IntegerChoices

from django_redis_metrics import UniqueBitmap
from django_redis_metrics.bitmaps import model as bitmap_model
from django_redis_metrics.bitmaps.cleaner import clean_bitmaps
from django_redis_metrics.bitmaps.retention import MAX_KEEP
from django_redis_metrics.core.periods import Day, Month, Week
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.core.scripts import MetricsRefused

from ..racing import race

DAY = 86400


class Level(enum.IntEnum):
    GOLD = 3


class Plan(IntegerChoices):
    PRO = 5, "Pro"


def snapshot(backend: Any) -> dict[str, tuple[bytes, int]]:
    return {k: (backend.client.dump(k), backend.client.pttl(k) > 0) for k in backend.keys()}


def suffixes(backend: Any, bitmap: UniqueBitmap, period: str) -> set[str]:
    prefix = bitmap.key(Day.containing(0)).rsplit(":day:", 1)[0] + f":{period}:"
    return {k.removeprefix(prefix) for k in backend.keys() if k.startswith(prefix)}


def test_marked_daily_for_150_days_it_holds_only_its_retained_periods(backend: Any) -> None:
    active = UniqueBitmap("daily")
    now = time.time()
    for days_ago in range(149, -1, -1):
        active.mark(days_ago % 50, now - days_ago * DAY)
    today = Day.containing(now)
    kept_days = {today.shift(-i).suffix for i in range(92)}
    assert suffixes(backend, active, "day") == kept_days
    assert {m.decode() for m in backend.client.zrange(active.index_key("day"), 0, -1)} == kept_days
    weeks = {Week.containing(now - d * DAY).suffix for d in range(150)}
    assert suffixes(backend, active, "week") == weeks  # 105 weeks are kept
    months = {Month.containing(now - d * DAY).suffix for d in range(150)}
    assert suffixes(backend, active, "month") == months
    for period in (today, today.shift(-91), Week.containing(now), Month.containing(now)):
        keep = {"day": 92, "week": 105, "month": 60}[period.name]
        expected = period.shift(keep).start_ts * 1000
        assert backend.client.pexpiretime(active.key(period)) == pytest.approx(expected, abs=1)
    # An index lives as long as its newest period, the meta hash as long as the newest of all.
    assert backend.client.pexpiretime(active.index_key("day")) == today.shift(92).start_ts * 1000
    newest_month = Month.containing(now).shift(60).start_ts * 1000
    assert backend.client.pexpiretime(active.meta_key) == newest_month


def test_a_mark_past_its_retention_is_not_kept(backend: Any) -> None:
    active = UniqueBitmap("late", periods=("day", "month"))
    active.mark(1, time.time() - 2200 * DAY)  # its day and its month are both past retention
    assert [k for k in backend.keys() if ":bitmap:" in k] == []
    assert UniqueBitmap.objects.names() == []
    active.mark(1, time.time() - 100 * DAY)  # its month is kept, its day is not
    assert suffixes(backend, active, "day") == set()
    assert len(suffixes(backend, active, "month")) == 1


def test_a_new_period_drops_periods_kept_under_a_longer_retention(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    active = UniqueBitmap("shrunk", periods=("day",))
    now = time.time()
    with monkeypatch.context() as longer:
        longer.setattr(bitmap_model, "retention", lambda: MAX_KEEP)
        for days_ago in (300, 200, 1):
            active.mark(1, now - days_ago * DAY)
    query = active.between(now - 300 * DAY, now - 200 * DAY)
    assert query.count() == 1  # cached: the days are long over
    active.mark(2, now)  # today is a new day: the days past 92 go, with their keys
    today = Day.containing(now)
    assert suffixes(backend, active, "day") == {today.suffix, today.shift(-1).suffix}
    assert query.count() == 0  # the cached union is stale: it is not used again


def test_a_mark_ahead_of_the_redis_clock_is_refused_with_nothing_written(backend: Any) -> None:
    active = UniqueBitmap("ahead")
    active.mark(1)
    before = snapshot(backend)
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        active.mark(2, time.time() + MAX_AHEAD + 60)
    assert snapshot(backend) == before


def test_integer_ids_above_max_user_id_are_refused_with_nothing_written(
    backend: Any, metrics_settings: Any
) -> None:
    active = UniqueBitmap("big")
    active.mark(2**27 - 1)
    before = snapshot(backend)
    for bad in (2**27, 2**32 - 1):
        with pytest.raises(ValueError, match=r"MAX_USER_ID.*16 MB.*mapped") as refused:
            active.mark(bad)
        assert not isinstance(refused.value, MetricsRefused)  # refused before Redis is asked
    assert snapshot(backend) == before
    metrics_settings(MAX_USER_ID=2**28 - 1)
    active.mark(2**27, time.time())
    assert active.contains(2**27, "day")


def test_int_subclasses_are_user_ids(backend: Any) -> None:
    active = UniqueBitmap("enum")
    active.mark(Level.GOLD)
    active.mark(Plan.PRO)
    assert active.count("day") == 2
    assert active.contains(Level.GOLD, "day") and active.contains(3, "day")
    assert Plan.PRO in active.last(1) and 5 in active.day()
    with pytest.raises(TypeError, match="bool"):
        active.mark(True)


def test_marks_racing_each_other_and_the_cleaner_keep_exactly_the_retained_days(
    backend: Any, metrics_settings: Any
) -> None:
    """Three writers mark the last 60 days, oldest first (each mark of a new day drops the days
    past 20 from the index, with their keys), while the cleaner drops them too, again and
    again: in the end exactly the 20 retained days are kept, each with every user marked."""
    metrics_settings(BITMAP_RETENTION={"day": 20})
    active = UniqueBitmap("raced", periods=("day",))
    now = time.time()

    def write(user: int) -> None:
        for days_ago in range(59, -1, -1):
            active.mark(user, now - days_ago * DAY)

    race([partial(write, user) for user in (1, 2, 3)], partial(clean_bitmaps, now=now))
    today = Day.containing(now)
    kept = {today.shift(-i).suffix for i in range(20)}
    assert suffixes(backend, active, "day") == kept
    assert {m.decode() for m in backend.client.zrange(active.index_key("day"), 0, -1)} == kept
    for i in range(20):
        assert active.count("day", today.shift(-i).start_ts) == 3
