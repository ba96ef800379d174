"""UniqueEstimate writes: one atomic round trip, retention and TTLs at write time, nothing
written on bad input, deferred writes delivered by flush(), the cleaner retiring what is old."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import django_redis_metrics
from django_redis_metrics import Batch, UniqueEstimate
from django_redis_metrics.cleanup import CLEANERS
from django_redis_metrics.core.periods import Day, Hour, Month, Week
from django_redis_metrics.core.retention import MAX_AHEAD, MAX_PERIODS_KEPT
from django_redis_metrics.core.scripts import MetricsRefused
from django_redis_metrics.estimates import model as estimate_model
from django_redis_metrics.estimates.cleaner import clean_estimates
from django_redis_metrics.estimates.items import MAX_ITEM_BYTES
from django_redis_metrics.sending import sender

DAY = 86400


def snapshot(backend: Any) -> dict[str, tuple[bytes, int]]:
    return {k: (backend.client.dump(k), backend.client.pttl(k) > 0) for k in backend.keys()}


def suffixes(backend: Any, estimate: UniqueEstimate, period: str) -> set[str]:
    prefix = f"{backend.prefix}:estimate:{{{estimate.name}}}:{period}:"
    return {k.removeprefix(prefix) for k in backend.keys() if k.startswith(prefix)}


@pytest.fixture
def fresh_sender() -> Iterator[None]:
    sender.reset()
    yield
    sender.reset()


def test_an_add_is_one_round_trip(backend: Any, round_trips: Any) -> None:
    visitors = UniqueEstimate("visitors", periods=("hour", "day", "week", "month"))
    visitors.add("first")  # on the cluster, the first write also lists the estimate
    for item in ("a", 2, uuid.uuid4()):
        assert round_trips(lambda item=item: visitors.add(item)) == 1
    assert visitors.count("hour") == 4


def test_a_batch_of_adds_is_one_round_trip_on_a_single_node(single: Any, round_trips: Any) -> None:
    visitors, searches = UniqueEstimate("visitors"), UniqueEstimate("searches")
    visitors.add(0)
    searches.add("warm-up")
    with Batch() as batch:
        for n in range(50):
            visitors.add(n, batch=batch)
            searches.add(f"term {n % 10}", batch=batch)
        round_trips.reset()
    assert round_trips.calls == 1
    assert (visitors.count("day"), searches.count("month")) == (50, 11)


def test_every_key_expires_at_the_end_of_its_periods_retention(backend: Any) -> None:
    visitors = UniqueEstimate("visitors", periods=("hour", "day", "week", "month"))
    now = time.time()
    visitors.add(1, now)
    keep = {"hour": 48, "day": 92, "week": 105, "month": 60}
    newest = 0
    for period in (Hour.containing(now), Day.containing(now), Week.containing(now)):
        expected = period.shift(keep[period.name]).start_ts * 1000
        assert backend.client.pexpiretime(visitors.key(period)) == pytest.approx(expected, abs=1)
        assert backend.client.pexpiretime(visitors.index_key(period.name)) == pytest.approx(
            expected, abs=1
        )
    month = Month.containing(now)
    newest = month.shift(60).start_ts * 1000
    assert backend.client.pexpiretime(visitors.key(month)) == pytest.approx(newest, abs=1)
    assert backend.client.pexpiretime(visitors.meta_key) == pytest.approx(newest, abs=1)
    assert all(backend.client.pttl(k) > 0 for k in backend.keys() if ":catalogue:" not in k)


@pytest.mark.django_db  # periods Redis no longer holds: the archive
def test_estimate_retention_sets_the_ttls(backend: Any, metrics_settings: Any) -> None:
    metrics_settings(ESTIMATE_RETENTION={"day": 3, "week": 2})
    visitors = UniqueEstimate("visitors")
    now = time.time()
    visitors.add(1, now)
    day, week, month = Day.containing(now), Week.containing(now), Month.containing(now)
    assert backend.client.pexpiretime(visitors.key(day)) == pytest.approx(
        day.shift(3).start_ts * 1000, abs=1
    )
    assert backend.client.pexpiretime(visitors.key(week)) == pytest.approx(
        week.shift(2).start_ts * 1000, abs=1
    )
    assert backend.client.pexpiretime(visitors.key(month)) == pytest.approx(
        month.shift(60).start_ts * 1000, abs=1
    )
    visitors.add(2, now - 3 * DAY)  # its day left retention: only its week and month count it
    assert suffixes(backend, visitors, "day") == {day.suffix}
    assert visitors.count("day", now - 3 * DAY) == 0


def test_a_backfill_past_its_retention_is_not_kept(backend: Any) -> None:
    visitors = UniqueEstimate("late", periods=("day", "month"))
    visitors.add("x", time.time() - 2200 * DAY)  # its day and its month are past retention
    assert backend.keys() == []
    assert UniqueEstimate.objects.names() == []
    visitors.add("x", time.time() - 100 * DAY)  # its month is kept, its day is not
    assert suffixes(backend, visitors, "day") == set()
    assert len(suffixes(backend, visitors, "month")) == 1


def test_a_new_period_drops_periods_kept_under_a_longer_retention(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    daily = UniqueEstimate("shrunk", periods=("day",))
    now = time.time()
    with monkeypatch.context() as longer:
        longer.setattr(estimate_model, "retention", lambda: MAX_PERIODS_KEPT)
        for days_ago in (300, 200, 1):
            daily.add("a", now - days_ago * DAY)
    assert len(suffixes(backend, daily, "day")) == 3
    daily.add("b", now)  # a new day: the days past 92 go, with their keys
    today = Day.containing(now)
    assert suffixes(backend, daily, "day") == {today.suffix, today.shift(-1).suffix}
    assert daily.index_key("day") in backend.keys()


def test_a_write_ahead_of_the_redis_clock_is_refused_with_nothing_written(backend: Any) -> None:
    visitors = UniqueEstimate("ahead")
    visitors.add(1)
    before = snapshot(backend)
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        visitors.add(2, time.time() + MAX_AHEAD + 60)
    assert snapshot(backend) == before


@pytest.mark.parametrize(
    ("item", "error", "match"),
    [
        (True, TypeError, "not a bool"),
        (1.5, TypeError, "not float"),
        (None, TypeError, "not NoneType"),
        (b"bytes", TypeError, "not bytes"),
        ("", ValueError, "empty"),
        ("é" * (MAX_ITEM_BYTES // 2 + 1), ValueError, f"at most {MAX_ITEM_BYTES} bytes"),
        ("\ud800", ValueError, "UTF-8"),
        (2**64, ValueError, "64-bit"),
        (-(2**63) - 1, ValueError, "64-bit"),
        (object(), TypeError, "str, int or UUID"),
    ],
)
def test_a_bad_item_writes_nothing(backend: Any, item: object, error: type, match: str) -> None:
    visitors = UniqueEstimate("visitors")
    visitors.add("kept")
    before = snapshot(backend)
    with pytest.raises(error, match=match):
        visitors.add(item)
    with pytest.raises(error, match=match):
        visitors.add(item, defer=True)
    assert snapshot(backend) == before


def test_bad_arguments_write_nothing(backend: Any) -> None:
    visitors = UniqueEstimate("visitors")
    visitors.add("kept")
    before = snapshot(backend)
    with pytest.raises(TypeError, match="defer must be True or False"):
        visitors.add(1, defer="yes")
    with pytest.raises(TypeError, match="not both"):
        visitors.add(1, defer=True, batch=Batch())
    with pytest.raises(TypeError, match="batch must be a Batch"):
        visitors.add(1, batch=[])  # type: ignore[arg-type]
    with pytest.raises((TypeError, ValueError), match="when"):
        visitors.add(1, when="yesterday")
    assert snapshot(backend) == before


def test_a_key_of_another_type_refuses_the_whole_write(backend: Any) -> None:
    visitors = UniqueEstimate("visitors")
    now = time.time()
    visitors.add(1, now)
    backend.client.delete(visitors.key(Month.containing(now)))
    backend.client.set(visitors.key(Month.containing(now)), "not an HLL")
    before = snapshot(backend)
    with pytest.raises(MetricsRefused, match="not a HyperLogLog"):
        visitors.add(2, now)
    assert snapshot(backend) == before
    backend.client.delete(visitors.key(Month.containing(now)))
    backend.client.rpush(visitors.key(Month.containing(now)), "a list")
    before = snapshot(backend)
    with pytest.raises(Exception, match="WRONGTYPE"):
        visitors.add(2, now)
    assert snapshot(backend) == before


def test_deferred_adds_are_stored_by_flush(backend: Any, fresh_sender: None) -> None:
    visitors = UniqueEstimate("deferred")
    for item in ("a", "b", "a", 3):
        assert visitors.add(item, defer=True) is None  # type: ignore[func-returns-value]
    assert django_redis_metrics.flush()
    assert visitors.count("day") == 3
    assert UniqueEstimate.objects.names() == ["deferred"]
    visitors.add("late", time.time() - 2 * DAY, defer=True)  # the time of the call is kept
    assert django_redis_metrics.flush()
    assert visitors.count("day", time.time() - 2 * DAY) == 1


def test_the_cleaner_drops_old_periods_and_retires_emptied_estimates(
    backend: Any, monkeypatch: pytest.MonkeyPatch, metrics_settings: Any
) -> None:
    assert CLEANERS["estimate"] is clean_estimates
    visitors = UniqueEstimate("visitors")
    now = time.time()
    visitors.add("b", now)
    with monkeypatch.context() as longer:  # written before ESTIMATE_RETENTION was lowered
        longer.setattr(estimate_model, "retention", lambda: MAX_PERIODS_KEPT)
        visitors.add("a", now - 200 * DAY)
    dry = clean_estimates(dry_run=True)
    assert (dry.metrics_checked, dry.items_removed) == (1, 1)  # the day 200 days ago
    assert len(suffixes(backend, visitors, "day")) == 2
    report = clean_estimates()
    assert report.items_removed == 1 and report.metrics_removed == []
    assert suffixes(backend, visitors, "day") == {Day.containing(now).suffix}
    metrics_settings(ESTIMATE_RETENTION={"day": 1, "week": 1, "month": 1})
    later = clean_estimates(now=now + 400 * DAY)  # every period is past retention by then
    assert later.metrics_removed == ["visitors"]
    assert UniqueEstimate.objects.names() == []
    assert not visitors.exists()
    assert [k for k in backend.keys() if ":index:" in k or ":meta" in k] == []


def test_a_bad_retention_setting_is_a_clear_error(backend: Any, metrics_settings: Any) -> None:
    visitors = UniqueEstimate("visitors")
    metrics_settings(ESTIMATE_RETENTION={"day": 0})
    with pytest.raises(ValueError, match="day periods kept must be positive"):
        visitors.add(1)
    with pytest.raises(ValueError, match="ESTIMATE_RETENTION"):
        clean_estimates()
    metrics_settings(ESTIMATE_RETENTION=[1])
    with pytest.raises(TypeError, match="dict of period name"):
        visitors.add(1)
    metrics_settings(ESTIMATE_RETENTION={"year": 3})
    with pytest.raises(ValueError, match="Unknown period 'year'"):
        visitors.between(time.time(), time.time()).count()
    assert backend.keys() == []
