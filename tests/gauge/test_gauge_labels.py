"""A labelled gauge: one value per series, read per series or grouped by a label."""

from __future__ import annotations

import time
from typing import Any

import pytest

from django_redis_metrics import Gauge
from django_redis_metrics.core.labels.admission import answers

from ..asyncio_helpers import run


def test_group_by_gives_each_series_or_adds_per_label(backend: Any) -> None:
    queue = Gauge("queue", labels=("queue", "host"))
    now = time.time()
    queue.labels(queue="mail", host="a").set(3, when=now)
    queue.labels(queue="mail", host="b").set(4, when=now)
    queue.labels(queue="img", host="a").set(10, when=now)
    queue.labels(queue="img", host="a").set(7, when=now + 0.001)  # the latest wins
    assert queue.group_by() == {("mail", "a"): 3, ("mail", "b"): 4, ("img", "a"): 7}
    assert queue.group_by("queue") == {"mail": 7, "img": 7}
    assert run(lambda: queue.agroup_by("host")) == {"a": 10, "b": 4}
    assert queue.labels(queue="mail", host="b").get() == 4
    with pytest.raises(ValueError, match="no label 'colour'"):
        queue.group_by("colour")
    with pytest.raises(TypeError, match="labelled"):
        queue.set(1)


def test_a_full_gauge_groups_the_rest_under_other(single: Any) -> None:
    answers.clear()
    queue = Gauge("few", labels=("queue",), max_series=1)
    now = time.time()
    queue.labels(queue="a").set(1, when=now)
    queue.labels(queue="b").set(2, when=now)
    run(lambda: queue.labels(queue="c").aset(5, when=now + 0.001))
    assert queue.group_by() == {("a",): 1, "__other__": 5}
