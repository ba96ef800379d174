"""Statistic.record_many: several values of one moment in bounded atomic calls."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import pytest

from django_redis_metrics import Batch, Statistic


def keyspace(backend: Any) -> dict[str, bytes]:
    return {key: backend.client.dump(key) for key in backend.keys()}


def test_equals_recording_one_by_one(backend: Any) -> None:
    values = [3, 0.5, 12.25, 7, 400.0, 0, -2.5, 31]
    when = 1_000_000_000 + 90
    one = Statistic("one", precisions=[60, 3600])
    for value in values:
        one.record(value, when=when)
    many = Statistic("many", precisions=[60, 3600])
    assert many.record_many(values, when=when) == 1
    for precision in (60, 3600):
        a, b = one.summary(precision, when=when), many.summary(precision, when=when)
        assert a.keys() == b.keys()
        for key in a:
            assert math.isclose(a[key], b[key], rel_tol=1e-12), key
    assert many.totals() == one.totals() == {"count": 8, "sum": sum(values)}


class Small(Statistic):
    MAX_VALUES_PER_CALL: ClassVar[int] = 3


def test_long_inputs_go_in_bounded_calls(backend: Any) -> None:
    small = Small("small", precisions=[60])
    assert small.record_many(range(1, 11), when=600) == 4
    summary = small.summary(60, when=600)
    assert (summary["count"], summary["sum"], summary["min"], summary["max"]) == (10, 55, 1, 10)
    batch = Batch()
    assert small.record_many([5, 6, 7, 8], when=600, batch=batch) == 2
    batch.execute()
    assert small.summary(60, when=600)["count"] == 14


@pytest.mark.parametrize("bad", [True, "3", float("nan"), math.inf, None, 2**60])
def test_bad_input_anywhere_writes_nothing(backend: Any, bad: object) -> None:
    statistic = Small("bad", precisions=[60])
    statistic.record(1, when=600)
    before = keyspace(backend)
    with pytest.raises((TypeError, ValueError)):
        statistic.record_many([1, 2, 3, 4, 5, bad, 6], when=600)
    assert keyspace(backend) == before


def test_nothing_to_record_is_no_call(backend: Any) -> None:
    assert Statistic("empty").record_many([]) == 0
    assert backend.keys() == []
