"""The batched event series cleaner: many series per round trip, each preened exactly to its
retention, a series with more to remove than one call finished, dry runs read-only."""

from __future__ import annotations

import random
from typing import Any

import pytest

from django_redis_metrics import EventSeries
from django_redis_metrics.events.cleaner import clean_event_series

T0 = 1_700_000_000
RETENTION = 1000


def populate(count: int) -> dict[str, list[int]]:
    """Series with events spread over less than their retention (writes prune none), some
    with many: more than one preen call removes."""
    rng = random.Random(count)
    stamps = {}
    for index in range(count):
        name = f"s{index:02}"
        size = 40 if index % 5 == 0 else 6
        stamps[name] = sorted(T0 + rng.randrange(500) for _ in range(size))
        EventSeries(name, retention=RETENTION).record_many(
            [{"when": when, "n": i} for i, when in enumerate(stamps[name])]
        )
    return stamps


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_pass_over_many_pages_preens_every_series_exactly(backend: Any, dry_run: bool) -> None:
    stamps = populate(23)
    now = T0 + 1200  # cutoff T0 + 200: events strictly before it go
    before = {key: backend.client.dump(key) for key in backend.keys()}
    report = clean_event_series(now=now, batch_size=5, page=7, dry_run=dry_run)
    old = {name: [t for t in times if t < T0 + 200] for name, times in stamps.items()}
    assert report.metrics_checked == len(stamps)
    assert report.items_removed == sum(len(times) for times in old.values()) > 0
    assert len([name for name, times in old.items() if len(times) > 5]) > 1  # several calls
    if dry_run:
        assert {key: backend.client.dump(key) for key in backend.keys()} == before
        return
    for name, times in stamps.items():
        kept = EventSeries(name).between(0, now)
        assert sorted(e["timestamp"] for e in kept) == [t for t in times if t >= T0 + 200]
    again = clean_event_series(now=now, page=7)
    assert again.items_removed == 0
