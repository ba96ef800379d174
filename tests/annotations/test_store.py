"""annotate() and annotations(): round trip, order, tags filter, bounds (count, text, tags,
retention) enforced at write time in one atomic round trip, refusals writing nothing, both
backends, and the async twins."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

from django_redis_metrics import MetricsRefused, aannotate, aannotations, annotate, annotations
from django_redis_metrics.annotations.bounds import MAX_TAG_LENGTH, MAX_TAGS
from django_redis_metrics.annotations.keys import log_key, seq_key

from ..asyncio_helpers import run


def test_round_trip_oldest_first_with_text_and_tags(backend):
    now = time.time()
    annotate("Deploy v1.4", when=now - 60, tags=["deploy"])
    annotate("Incident opened", when=now - 600, tags=("incident", "web"))
    annotate("Note", when=datetime.fromtimestamp(now - 30, UTC))
    found = annotations(now - 3600, now)
    assert found == [
        {"when": pytest.approx(now - 600), "text": "Incident opened", "tags": ["incident", "web"]},
        {"when": pytest.approx(now - 60), "text": "Deploy v1.4", "tags": ["deploy"]},
        {"when": pytest.approx(now - 30), "text": "Note", "tags": []},
    ]
    assert annotations(now - 100, now - 40) == [found[1]]
    # Both ends are inclusive.
    assert annotations(found[0]["when"], found[1]["when"]) == found[:2]


def test_annotations_of_the_same_time_keep_their_order_and_never_merge(backend):
    now = time.time()
    for text in ["b", "a", "b", "c"]:
        annotate(text, when=now - 5)
    assert [a["text"] for a in annotations(now - 10, now)] == ["b", "a", "b", "c"]


def test_tags_filter_keeps_those_carrying_any_of_the_tags(backend):
    now = time.time()
    annotate("one", when=now - 3, tags=["deploy"])
    annotate("two", when=now - 2, tags=["incident"])
    annotate("three", when=now - 1, tags=["deploy", "web"])
    assert [a["text"] for a in annotations(now - 10, now, tags=["deploy"])] == ["one", "three"]
    assert [a["text"] for a in annotations(now - 10, now, tags="incident")] == ["two"]
    assert [a["text"] for a in annotations(now - 10, now, tags=["web", "incident"])] == [
        "two",
        "three",
    ]
    assert len(annotations(now - 10, now, tags=None)) == 3
    assert annotations(now - 10, now, tags=["nothing"]) == []


def test_one_round_trip_each(backend, round_trips):
    now = time.time()
    if backend.cluster:
        annotate("warm", when=now - 1)  # the cluster client learns the slots once
    assert round_trips(lambda: annotate("x", when=now - 1, tags=["a"])) == 1
    assert round_trips(lambda: annotations(now - 10, now)) == 1


def test_the_count_kept_is_the_newest(backend, metrics_settings):
    metrics_settings(ANNOTATION_MAX_COUNT=3)
    now = time.time()
    for i in range(5):
        annotate(f"n{i}", when=now - 100 + i)
    annotate("backfilled", when=now - 500)  # older than the 3 kept: dropped at once
    assert [a["text"] for a in annotations(now - 1000, now)] == ["n2", "n3", "n4"]


def test_retention_is_enforced_as_annotations_are_written(backend, metrics_settings):
    metrics_settings(ANNOTATION_RETENTION=3600)
    now = time.time()
    client = backend.client
    # Written as it stood before a shorter retention was set: an old member in place.
    client.zadd(log_key(), {'000000000001{"text":"old","tags":[]}': now - 7200})
    annotate("new", when=now - 10)
    assert [a["text"] for a in annotations(now - 10_000, now)] == ["new"]
    ttl = client.pttl(log_key())
    assert 3500_000 < ttl <= 3600_000
    assert 3500_000 < client.pttl(seq_key()) <= 3600_000


def test_a_time_older_than_the_retention_or_ahead_of_the_clock_is_refused(
    backend, metrics_settings
):
    metrics_settings(ANNOTATION_RETENTION=3600)
    now = time.time()
    with pytest.raises(MetricsRefused, match="older than"):
        annotate("too old", when=now - 7200)
    with pytest.raises(MetricsRefused, match="ahead of the Redis server clock"):
        annotate("too new", when=now + 3600)
    assert backend.keys() == []


@pytest.mark.parametrize(
    ("text", "tags", "error", "message"),
    [
        (None, (), TypeError, "text must be a str"),
        ("  ", (), ValueError, "empty or blank"),
        ("x" * 501, (), ValueError, "501 characters long; at most 500"),
        ("bell\x07", (), ValueError, "control character"),
        ("ok", [1], TypeError, "tags must be str"),
        ("ok", ["has space"], ValueError, "is not a tag"),
        ("ok", ["=cmd"], ValueError, "is not a tag"),
        ("ok", ["t" * (MAX_TAG_LENGTH + 1)], ValueError, "is not a tag"),
        ("ok", [f"t{i}" for i in range(MAX_TAGS + 1)], ValueError, "at most 10 tags"),
        ("ok", 5, TypeError, "tags must be a list"),
        ("ok", b"deploy", TypeError, "tags must be a list"),
    ],
)
def test_bad_input_says_what_was_wrong_and_writes_nothing(single, text, tags, error, message):
    with pytest.raises(error, match=message):
        annotate(text, tags=tags)
    assert single.keys() == []


def test_bad_when_and_ranges_are_refused(single):
    with pytest.raises(ValueError, match="aware datetime"):
        annotate("x", when=datetime(2026, 1, 1))
    with pytest.raises(TypeError, match="start must be"):
        annotations("yesterday", None)
    assert single.keys() == []


def test_the_text_length_is_a_setting_and_text_is_kept_as_given(single, metrics_settings):
    metrics_settings(ANNOTATION_MAX_LENGTH=10)
    now = time.time()
    with pytest.raises(ValueError, match="at most 10"):
        annotate("x" * 11, when=now)
    annotate('  <b>"é"</b>\n ', when=now - 1, tags="deploy")
    assert annotations(now - 5, now) == [
        {"when": pytest.approx(now - 1), "text": '<b>"é"</b>', "tags": ["deploy"]}
    ]


def test_async_twins(backend):
    now = time.time()

    async def scenario():
        stored = await aannotate("async deploy", when=now - 2, tags=["deploy"])
        return stored, await aannotations(now - 10, now, tags=["deploy"])

    stored, found = run(scenario)
    assert stored == {"when": now - 2, "text": "async deploy", "tags": ["deploy"]}
    assert found == [stored]
