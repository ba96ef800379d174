"""The cap on distinct indexed values per field: bounded keys whatever values arrive."""

from __future__ import annotations

import time
from typing import Any

import pytest

from django_redis_metrics import EventSeries
from django_redis_metrics.events.keys import OTHER_VALUE


def index_keys(backend: Any, series: EventSeries, field: str) -> list[str]:
    return [key for key in backend.keys() if f":by:{field}:" in key]


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_values_beyond_the_cap_are_indexed_under_other(backend: Any) -> None:
    downloads = EventSeries("downloads", index=["file"], max_values=3)
    for name in ["a", "b", "c", "d", "e", "a", "f"]:
        downloads.record(file=name)
    now = time.time() + 1
    assert downloads.count_by("file", 0, now) == {"a": 2, "b": 1, "c": 1, OTHER_VALUE: 3}
    assert len(index_keys(backend, downloads, "file")) == 4  # 3 values + the overflow
    assert backend.client.scard(downloads.values_key("file")) == 4
    # The events themselves keep their true values.
    assert [e["file"] for e in downloads.between(0, now)] == ["a", "b", "c", "d", "e", "a", "f"]
    assert downloads.count(0, now) == 7


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_record_many_respects_the_cap_within_one_call(backend: Any) -> None:
    series = EventSeries("imports", index=["user", "kind"], max_values=10)
    series.record_many([{"user": i, "kind": "x"} for i in range(50)])
    counts = series.count_by("user", 0, time.time() + 1)
    assert len(counts) == 11
    assert counts[OTHER_VALUE] == 40
    assert series.count_by("kind", 0, time.time() + 1) == {"x": 50}


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_the_setting_is_the_default_cap(backend: Any, settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "EVENT_MAX_VALUES": 2}
    series = EventSeries("clicks", index=["button"])
    assert series.max_values == 2
    for name in "xyz":
        series.record(button=name)
    assert series.count_by("button", 0, time.time() + 1) == {"x": 1, "y": 1, OTHER_VALUE: 1}
    assert EventSeries.objects.get("clicks").max_values == 2


def test_the_series_cap_is_stored_for_the_admin(backend: Any) -> None:
    EventSeries("orders", index=["country"], max_values=5).record(country="FR")
    assert EventSeries.objects.get("orders").max_values == 5


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_preening_removes_overflow_entries_and_frees_slots(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(EventSeries, "PRUNE_PER_WRITE", 0)  # preen, not the record, prunes
    now = time.time()
    series = EventSeries("old", index=["file"], retention=3600, max_values=1)
    series.record(when=now - 7200, file="a")
    series.record(when=now - 7200, file="b")  # overflow
    series.record(when=now, file="c")  # overflow: "a" still holds the only slot
    assert series.count_by("file", 0, now + 1) == {"a": 1, OTHER_VALUE: 2}
    assert series.preen(now) == 2
    assert series.count_by("file", 0, now + 1) == {OTHER_VALUE: 1}
    series.preen(now + 7200)
    assert index_keys(backend, series, "file") == []
    assert backend.client.scard(series.values_key("file")) == 0
    series.record(when=now, file="d")  # a slot is free again
    assert series.count_by("file", 0, now + 1) == {"d": 1}


@pytest.mark.parametrize("bad", [0, -1, 1.5, "10", True])
def test_bad_caps_are_refused(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError), match="max_values"):
        EventSeries("x", index=["f"], max_values=bad)


def test_a_bad_cap_setting_is_a_clear_error(single: Any, settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "EVENT_MAX_VALUES": 0}
    with pytest.raises(ValueError, match="EVENT_MAX_VALUES"):
        EventSeries("x", index=["f"]).record(f=1)
    assert single.keys() == []


# Reads reaching past the retention consult the archive (the database).
@pytest.mark.django_db(transaction=True)
def test_one_call_decides_each_entry_as_one_by_one_writes_would(backend: Any) -> None:
    """The record script decides where every index entry goes before it writes: repeated
    values, new values crossing the cap and an event past retention (not stored, so its value
    takes no slot) end as the same events written one by one."""
    now = time.time()
    rows = [
        {"when": now - 7200, "file": "z"},  # past retention: not stored
        {"when": now, "file": "a"},
        {"when": now, "file": "a"},
        {"when": now, "file": "z"},  # takes the second slot
        {"when": now, "file": "b"},  # overflow
        {"when": now, "file": "c"},  # overflow
        {"when": now, "file": "a"},
    ]
    batched = EventSeries("batched", index=["file"], retention=3600, max_values=2)
    single = EventSeries("single", index=["file"], retention=3600, max_values=2)
    batched.record_many(rows)
    for row in rows:
        single.record(row["when"], file=row["file"])
    expected = {"a": 3, "z": 1, OTHER_VALUE: 2}
    assert batched.count_by("file", 0, now + 1) == expected
    assert single.count_by("file", 0, now + 1) == expected
    client = backend.client
    for series in (batched, single):
        values = {v.decode() for v in client.smembers(series.values_key("file"))}
        assert values == {"a", "z", OTHER_VALUE}
        assert client.pttl(series.values_key("file")) > 0  # created with its TTL


def test_a_foreign_overflow_key_refuses_the_write_that_would_use_it(backend: Any) -> None:
    """The overflow sorted set is type-checked when an entry goes there: the write fails
    before anything is written; writes that do not reach the cap go on."""
    import redis

    series = EventSeries("foreign", index=["file"], max_values=1)
    client = backend.client
    client.set(series.index_key("file", OTHER_VALUE), "not a sorted set")
    series.record(file="a")
    series.record(file="a")
    before = {k: client.dump(k) for k in backend.keys()}
    with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
        series.record(file="b")
    assert {k: client.dump(k) for k in backend.keys()} == before


def test_a_changed_configuration_is_stored_by_the_next_record(backend: Any) -> None:
    """The meta hash is written only when the configuration changed: a series recorded again
    under a new retention, cap or index stores it."""
    EventSeries("conf", index=["a"], retention=3600, max_values=5).record(a=1)
    EventSeries("conf", index=["a"], retention=3600, max_values=5).record(a=2)
    stored = EventSeries.objects.get("conf")
    assert (stored.retention, stored.max_values, stored.index) == (3600, 5, ("a",))
    EventSeries("conf", index=["a", "b"], retention=7200, max_values=7).record(a=3, b=1)
    stored = EventSeries.objects.get("conf")
    assert (stored.retention, stored.max_values, stored.index) == (7200, 7, ("a", "b"))


# Reads reaching past the retention consult the archive (the database).
@pytest.mark.django_db(transaction=True)
def test_racing_recorders_fill_the_cap_exactly(backend: Any) -> None:
    """Threads recording new values one by one and in batches while a preener loops: exactly
    ``max_values`` values are indexed under themselves, every event is indexed exactly once."""
    from tests.racing import race

    series = EventSeries("racing cap", index=["user"], max_values=7)
    now = time.time()

    def writer(seed: int) -> Any:
        def write() -> None:
            for i in range(40):
                if i % 8 == 0:
                    series.record_many(
                        [{"when": now, "user": seed * 1000 + i + j} for j in range(4)]
                    )
                else:
                    series.record(now, user=seed * 1000 + i % 5)

        return write

    race([writer(seed) for seed in range(4)], lambda: series.preen(now))
    counts = series.count_by("user", 0, now + 1)
    assert len(counts) == 8 and OTHER_VALUE in counts
    assert sum(counts.values()) == series.count(0, now + 1) == 4 * (35 + 5 * 4)
    assert backend.client.scard(series.values_key("file")) == 0
    assert backend.client.scard(series.values_key("user")) == 8
