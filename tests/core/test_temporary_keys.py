"""Temporary keys live in a namespace no metric key reaches: the stray-key cleaner never touches
a metric, whatever characters its name or its indexed values hold."""

from __future__ import annotations

from typing import Any

import pytest

from django_redis_metrics import Counter, EventSeries, UniqueBitmap
from django_redis_metrics.cleanup import clean_all
from django_redis_metrics.core.cleaning import STRAY_TEMP_TTL, clean_temporary
from django_redis_metrics.core.keys import temp_key
from django_redis_metrics.core.periods import Day

NASTY = ["a}:tmp:b", "}:tmp:", "*", "?", "[", "[a-z]*", "x:tmp:{y}:z", "\\*", "a*b?c[d"]


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_an_indexed_value_holding_tmp_keeps_its_index(backend: Any) -> None:
    """The data loss of the old pattern ``<prefix>:*}:tmp:*``: it matched the index key of the
    value "a}:tmp:b" and gave it a 60 s TTL, so count_by lost it a minute later."""
    downloads = EventSeries("downloads", index=["file"])
    downloads.record(file="a}:tmp:b")
    index = downloads.index_key("file", "a}:tmp:b")
    before = backend.client.pttl(index)
    report = clean_temporary(passes=0)
    assert report.metrics_checked == 0  # no temporary key found: the index key is not one
    assert backend.client.pttl(index) > before - 60_000 > STRAY_TEMP_TTL * 1000
    assert downloads.count_by("file", 0, 2e9) == {"a}:tmp:b": 1}


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_names_and_values_full_of_glob_characters_survive_every_cleaner(backend: Any) -> None:
    series = EventSeries("files*?[", index=["file"])
    for value in NASTY:
        series.record(file=value)
    counter = Counter("hits:tmp:*?[x]", precisions=[60])
    counter.incr()
    bitmap = UniqueBitmap("users:tmp:[*]?", periods=("day",))
    bitmap.mark(1)
    # Every key but the catalogues and the user ids' kind (one per PREFIX) has a retention TTL.
    keys = [key for key in backend.keys() if ":catalogue:" not in key and ":bitmapid:" not in key]
    ttls = {key: backend.client.pttl(key) for key in keys}
    assert {key: ttl for key, ttl in ttls.items() if ttl <= STRAY_TEMP_TTL * 1000} == {}
    reports = clean_all(passes=0)
    assert {r.kind: r.items_removed for r in reports}["temporary"] == 0
    for key in keys:
        assert backend.client.pttl(key) > ttls[key] - 60_000, key
    assert series.count_by("file", 0, 2e9) == dict.fromkeys(NASTY, 1)
    assert counter.total() == 1
    assert bitmap.count("day") == 1


def test_the_stray_key_cleaner_finds_temporary_keys_in_their_slot(backend: Any) -> None:
    stray = temp_key("bitmap", "users:tmp:*", "crashed")
    busy = temp_key("bitmap", "users:tmp:*", "running")
    backend.client.set(stray, b"\x01")
    backend.client.set(busy, b"\x01", ex=300)
    assert (
        backend.client.cluster_keyslot(stray)
        == backend.client.cluster_keyslot(UniqueBitmap("users:tmp:*").key(Day.containing(0)))
        if backend.cluster
        else True
    )
    report = clean_temporary(passes=0)
    assert report.metrics_checked == 2 and report.items_removed == 1
    assert 0 < backend.client.ttl(stray) <= STRAY_TEMP_TTL
    assert 250 < backend.client.ttl(busy) <= 300
