"""Refusals that write nothing at all: not even writes undone in the same script, which replicas
and the AOF would still receive. Shown by the keyspace (DUMP and TTL of every key) and by Redis's
dirty counter (``rdb_changes_since_last_save``: every write command counts)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from django_redis_metrics import Counter
from django_redis_metrics.core.retention import MAX_AHEAD

from .test_refusals import keyspace


def dirty(client: Any) -> int:
    """Writes the Redis server has applied since its last save."""
    return int(client.info("persistence")["rdb_changes_since_last_save"])


@pytest.mark.parametrize("written_before", [True, False], ids=["existing", "new"])
def test_a_counter_slice_past_the_clock_is_refused_with_zero_writes(
    single: Any, written_before: bool
) -> None:
    counter = Counter("c")
    if written_before:
        counter.incr()
    before, writes = keyspace(single), dirty(single.client)
    with pytest.raises(ValueError, match="ahead of the Redis server clock"):
        counter.incr(1, time.time() + 3600)
    assert dirty(single.client) == writes
    assert keyspace(single) == before


def test_incr_many_with_one_late_slice_writes_nothing(single: Any) -> None:
    counter = Counter("c")
    now = time.time()
    counter.incr(1, now)
    before, writes = keyspace(single), dirty(single.client)
    with pytest.raises(ValueError, match="ahead of the Redis server clock"):
        counter.incr_many([(now, 1), (now - 7200, 2), (now + MAX_AHEAD + 3600, 1)])
    assert dirty(single.client) == writes
    assert keyspace(single) == before


def test_a_slice_within_the_allowed_lead_is_still_written(single: Any) -> None:
    counter = Counter("c", precisions=[1])
    counter.incr(3, time.time() + MAX_AHEAD / 2)
    assert counter.lifetime_total() == 3
