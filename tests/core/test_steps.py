"""Steps are sans-I/O: a generator is driven here with canned replies, no Redis and no client,
and what it asks for and makes of the answers is checked step by step."""

from __future__ import annotations

from typing import Any

import pytest
from redis.exceptions import NoScriptError, ResponseError

from django_redis_metrics import Counter, Gauge
from django_redis_metrics.core.batch import ScriptCall, calls_steps
from django_redis_metrics.core.gather import gather_steps
from django_redis_metrics.core.keys import catalogue_key
from django_redis_metrics.core.scripts import LuaScript, MetricsRefused
from django_redis_metrics.core.steps import Op, Pipe, Script, Steps


def replay(steps: Steps[Any], *replies: Any) -> tuple[list[Any], Any]:
    """Drive ``steps`` with ``replies`` (an exception is thrown in): the steps it yielded,
    and its result."""
    asked = [next(steps)]
    try:
        for reply in replies:
            if isinstance(reply, Exception):
                asked.append(steps.throw(reply))
            else:
                asked.append(steps.send(reply))
    except StopIteration as done:
        return asked, done.value
    raise AssertionError(f"the steps want more: {asked[-1]!r}")


WRITE = LuaScript("write", "return 1\n")


def test_a_read_asks_one_command_and_parses_its_reply() -> None:
    counter = Counter("visits")
    asked, total = replay(counter._own_lifetime_total_steps(), b"42")
    assert asked == [Op("hget", counter.meta_key, "t")]
    assert total == 42
    assert replay(counter._own_lifetime_total_steps(), None)[1] == 0


def test_a_public_read_hook_is_the_same_steps_for_a_callers_pipeline() -> None:
    gauge = Gauge("queue")
    commands, parse = gauge.latest_reads()
    assert commands == [("hget", (gauge.meta_key, "v"))]
    assert parse([b"1700000000.5,3"]) == (1700000000.5, 3.0)
    assert parse([None]) is None  # a parse may be used again


def test_a_cluster_write_yields_its_listing_after_the_script_reply() -> None:
    counter = Counter("fresh")
    call = ScriptCall(WRITE, [counter.meta_key], [], counter._listing_steps)
    unlisted = 1
    asked, results = replay(calls_steps([call]), unlisted, 1, 1)
    assert asked[0] is call
    assert asked[1] == Op("zadd", catalogue_key("counter"), {"fresh": 0})
    assert isinstance(asked[2], Script) and asked[2].keys == [counter.meta_key]
    assert results == [None]
    listed = 0
    assert replay(calls_steps([call]), listed) == ([call], [None])  # no listing: one step


def test_a_refusal_thrown_into_a_write_is_raised_as_metrics_refused() -> None:
    call = ScriptCall(WRITE, ["k"], [])
    with pytest.raises(MetricsRefused, match="too far ahead"):
        replay(calls_steps([call]), ResponseError("DRM_REFUSED too far ahead"))


def test_a_batch_reloads_missing_scripts_and_resends_only_their_calls() -> None:
    first, second = ScriptCall(WRITE, ["a"], []), ScriptCall(WRITE, ["b"], [])
    errors: list[tuple[ScriptCall, Exception]] = []
    steps = calls_steps([first, second], errors)
    asked, results = replay(steps, [NoScriptError("NOSCRIPT"), 7], WRITE.sha, [8])
    assert asked[0] == Pipe([first, second], raise_on_error=False)
    assert asked[1] == Op("script_load", WRITE.source)
    assert asked[2] == Pipe([first], raise_on_error=False)
    assert results == [8, 7]
    assert errors == []


def test_gathered_reads_share_one_pipeline_and_keep_their_own_errors() -> None:
    counter, gauge = Counter("c"), Gauge("g")
    steps = gather_steps([counter._own_lifetime_total_steps(), gauge._latest_steps()])
    wrong = ResponseError("WRONGTYPE Operation against a key holding the wrong kind of value")
    asked, results = replay(steps, [b"5", wrong])
    assert asked == [
        Pipe([Op("hget", counter.meta_key, "t"), Op("hget", gauge.meta_key, "v")], False)
    ]
    assert results[0] == 5
    assert isinstance(results[1], ResponseError)
