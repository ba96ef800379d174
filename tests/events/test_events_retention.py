"""Retention at write time: a series keeps only its retention with no cleaner running, hashes
and index entries together (no orphan key); old backfills are not stored; every key carries a
TTL; writers racing each other and the cleaner leave exactly the retained events."""

from __future__ import annotations

import time
import uuid
from functools import partial
from typing import Any

import pytest

from django_redis_metrics import Batch, EventSeries
from django_redis_metrics.core.retention import MAX_AHEAD
from django_redis_metrics.core.scripts import MetricsRefused
from django_redis_metrics.events.cleaner import clean_event_series
from django_redis_metrics.events.keys import OTHER_VALUE

from ..racing import race

T0 = 1_700_000_000.0


def unique() -> str:
    return f"r-{uuid.uuid4().hex[:8]}"


def series_keys(backend: Any, series: EventSeries) -> list[str]:
    return [k for k in backend.keys() if f"{{{series.name}}}" in k]


def orphans(backend: Any, series: EventSeries) -> list[str]:
    """Keys and index entries that belong to no event of the time index, and events without
    their hash: what a retention that forgets half an event would leave."""
    client = backend.client
    ids = {int(i) for i in client.zrange(series.time_key, 0, -1)}
    found = []
    for key in series_keys(backend, series):
        if ":e:" in key and int(key.rsplit(":", 1)[1]) not in ids:
            found.append(key)
        if ":by:" in key:
            found += [f"{key} {m}" for m in client.zrange(key, 0, -1) if int(m) not in ids]
    found += [f"no hash for {i}" for i in ids if not client.exists(series.event_key(i))]
    for field in series.index:
        for value in client.smembers(series.values_key(field)):
            if not client.exists(series.index_key(field, value.decode())):
                found.append(f"value {value!r} of {field} has no index")
    return found


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_a_series_keeps_its_retention_as_it_is_recorded(backend: Any) -> None:
    series = EventSeries(unique(), index=["kind"], retention=600)
    with Batch() as batch:
        for i in range(300):  # 3000 s at one event every 10 s
            series.record(T0 + 10 * i, kind=f"k{i % 7}", n=i, batch=batch)
    stamps = [e["timestamp"] for e in series.between(0, T0 + 10_000)]
    newest = T0 + 2990
    assert stamps == [T0 + 10 * i for i in range(300) if T0 + 10 * i >= newest - 600]
    assert orphans(backend, series) == []
    counted = series.count_by("kind", 0, T0 + 10_000)
    assert sum(counted.values()) == len(stamps) == 61
    events = len([k for k in series_keys(backend, series) if ":e:" in k])
    assert events == 61


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_an_event_older_than_the_retention_is_not_stored(backend: Any) -> None:
    series = EventSeries(unique(), index=["kind"], retention=60)
    series.record(T0 + 100, kind="new")
    late = series.record(T0 + 50, kind="late")  # within 60 s of the newest: kept
    old = series.record(T0, kind="old")  # 100 s before the newest: not kept
    ids = [e["id"] for e in series.between(0, T0 + 200)]
    assert late in ids and old not in ids
    assert not backend.client.exists(series.event_key(old))
    assert series.count_by("kind", 0, T0 + 200) == {"new": 1, "late": 1}
    assert not backend.client.exists(series.index_key("kind", "old"))
    imported = series.record_many([{"when": T0 + 10, "kind": "x"}, {"when": T0 + 99, "kind": "y"}])
    assert [e["kind"] for e in series.between(0, T0 + 200)] == ["late", "y", "new"]
    assert imported[1] == imported[0] + 1  # ids stay consecutive, the old one is just not kept


def test_every_key_of_a_series_carries_a_ttl(backend: Any) -> None:
    series = EventSeries(unique(), index=["kind"], retention=3600, max_values=1)
    series.record(kind="a", note="x")
    series.record(kind="b")  # over the cap: indexed under the overflow value
    series.counts(time.time() - 120, time.time(), 60)  # caches closed windows
    client = backend.client
    keys = series_keys(backend, series)
    assert series.cache_key(60) in keys and series.index_key("kind", OTHER_VALUE) in keys
    for key in keys:
        ttl = client.pttl(key)
        limit = 3 if ":e:" in key else 2
        assert 3600_000 < ttl <= limit * 3600_000, key


def test_an_abandoned_series_disappears_with_its_catalogue_entry(backend: Any) -> None:
    series = EventSeries("abandoned", index=["kind"], retention=1)
    series.record(kind="a")
    assert EventSeries.objects.names() == ["abandoned"]
    time.sleep(3.2)  # keys live twice the retention, event hashes three times
    assert series_keys(backend, series) == []
    assert EventSeries.objects.names() == []
    clean_event_series()
    assert EventSeries.objects.names() == []
    assert backend.keys() == []


def test_an_event_ahead_of_the_redis_clock_is_refused_with_nothing_written(backend: Any) -> None:
    series = EventSeries(unique(), index=["kind"])
    series.record(kind="now")
    before = {k: backend.client.dump(k) for k in backend.keys()}
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        series.record(time.time() + MAX_AHEAD + 60, kind="later")
    with pytest.raises(ValueError, match="ahead"):
        series.record_many([{"kind": "a"}, {"kind": "b", "when": time.time() + 86400}])
    assert {k: backend.client.dump(k) for k in backend.keys()} == before


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_writers_racing_each_other_and_the_cleaner_keep_exactly_the_retention(
    backend: Any,
) -> None:
    """Three writers record interleaved events second by second (900 s, retention 300 s) while
    the cleaner preens again and again at the newest second: in the end the series holds
    exactly the events of the last 300 s, each whole, and no orphan."""
    name, writers, span, retention = unique(), 3, 900, 300
    newest = T0 + span - 1

    def write(offset: int) -> None:
        series = EventSeries(name, index=["w"], retention=retention)
        for second in range(span):
            series.record(T0 + second, w=f"w{offset}", s=second)

    race([partial(write, w) for w in range(writers)], partial(clean_event_series, now=newest))
    series = EventSeries(name, index=["w"], retention=retention)
    series.preen(newest, batch_size=10_000)  # the last records may have left a few
    kept = series.between(0, newest)
    expected = sorted(
        (T0 + s, f"w{w}") for w in range(writers) for s in range(span) if T0 + s >= newest - 300
    )
    assert sorted((e["timestamp"], e["w"]) for e in kept) == expected
    assert all(e["s"] == e["timestamp"] - T0 for e in kept)
    assert orphans(backend, series) == []
    assert series.count_by("w", 0, newest) == {f"w{w}": len(expected) // writers for w in range(3)}
