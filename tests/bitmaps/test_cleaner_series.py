"""The cleaners of unique bitmaps and estimates walk labelled series too: the catalogue lists
each series under its own name (``name\\x1flabel=value``), which no plain metric may take, and
a pass used to stop there with a ValueError."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django_redis_metrics import UniqueBitmap, UniqueEstimate
from django_redis_metrics.bitmaps.cleaner import clean_bitmaps
from django_redis_metrics.core.periods import Day
from django_redis_metrics.estimates.cleaner import clean_estimates

PARIS = ZoneInfo("Europe/Paris")
NOW = datetime(2026, 11, 20, 12, 30, tzinfo=PARIS)
OLD = NOW - timedelta(days=10)


def test_a_labelled_bitmaps_series_are_cleaned(backend: Any, metrics_settings: Any) -> None:
    metrics_settings(TIME_ZONE="Europe/Paris")
    paid = UniqueBitmap("active", periods=("day",), labels=("plan",)).labels(plan="paid")
    paid.mark(1, OLD)
    paid.mark(2, NOW)
    old_key, new_key = paid.key(Day.containing(OLD)), paid.key(Day.containing(NOW))
    assert backend.client.exists(old_key, new_key) == 2
    metrics_settings(BITMAP_RETENTION={"day": 4})  # Redis keeps less from now on
    report = clean_bitmaps(backend.client, now=NOW)
    assert report.items_removed == 1
    assert (backend.client.exists(old_key), backend.client.exists(new_key)) == (0, 1)


def test_a_labelled_estimates_series_are_cleaned(backend: Any, metrics_settings: Any) -> None:
    metrics_settings(TIME_ZONE="Europe/Paris")
    paid = UniqueEstimate("searches", periods=("day",), labels=("plan",)).labels(plan="paid")
    paid.add("a", OLD)
    paid.add("b", NOW)
    old_key, new_key = paid.key(Day.containing(OLD)), paid.key(Day.containing(NOW))
    assert backend.client.exists(old_key, new_key) == 2
    metrics_settings(ESTIMATE_RETENTION={"day": 4})
    report = clean_estimates(backend.client, now=NOW)
    assert report.items_removed == 1
    assert (backend.client.exists(old_key), backend.client.exists(new_key)) == (0, 1)
