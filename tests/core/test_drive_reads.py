"""A pipeline of plain reads on one server is written straight to a pooled connection
(core/drive.py's ``_read_direct``): its answers are a redis-py ``Pipeline``'s, error replies
included, and ``raise_on_error`` raises the first as it does."""

from __future__ import annotations

import pytest
import redis
from redis.exceptions import ResponseError

from django_redis_metrics.core.drive import run_step
from django_redis_metrics.core.steps import Op, Pipe


def reads(prefix: str) -> list[Op]:
    return [
        Op("hgetall", f"{prefix}:h"),
        Op("zrangebylex", f"{prefix}:z", "-", "+"),
        Op("hget", f"{prefix}:h", "1"),
        Op("hgetall", f"{prefix}:s"),  # a string: WRONGTYPE
        Op("hgetall", f"{prefix}:missing"),
    ]


def test_plain_reads_answer_as_a_pipeline_does(single, monkeypatch):
    client, prefix = single.client, single.prefix
    client.hset(f"{prefix}:h", mapping={"1": "2", "3": "4"})
    client.zadd(f"{prefix}:z", {"a": 0, "b": 0})
    client.set(f"{prefix}:s", "x")
    pipe = client.pipeline(transaction=False)
    for op in reads(prefix):
        getattr(pipe, op.method)(*op.args)
    expected = pipe.execute(raise_on_error=False)

    def no_pipeline(*args: object, **kwargs: object) -> None:
        raise AssertionError("a Pipeline was used")

    monkeypatch.setattr(redis.client.Pipeline, "execute", no_pipeline)
    got = run_step(client, Pipe(reads(prefix), raise_on_error=False))
    assert [type(answer) for answer in got] == [type(answer) for answer in expected]
    assert got[:3] == expected[:3] and got[4] == expected[4] == {}
    assert str(got[3]) == str(expected[3]) and "WRONGTYPE" in str(got[3])
    with pytest.raises(ResponseError, match="WRONGTYPE"):
        run_step(client, Pipe(reads(prefix)))
    assert run_step(client, Pipe(reads(prefix)[:3])) == expected[:3]  # the socket kept in step
