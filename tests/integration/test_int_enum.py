"""Int subclasses a Django site passes every day (``IntEnum``, ``IntegerChoices``) are ints for
counts and user ids, through the models, the decorators and the middleware; ``bool`` is not."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client

from django_redis_metrics import Counter, EventSeries, UniqueBitmap
from django_redis_metrics.sending import sender

from ..django_site import view_hits
from .enum_urls import Level, Mode, Plan

pytestmark = pytest.mark.django_db


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_the_models_take_int_subclasses(backend: Any) -> None:
    counter = Counter("enum", precisions=[Level.GOLD, 60], samples=Plan.PRO)
    now = time.time()  # both writes in the same slices, whatever the clock does meanwhile
    counter.incr(Level.GOLD, when=now)
    counter.incr_many([(now, Plan.PRO)])
    assert counter.total(60) == 8
    assert len(counter.recent(Level.GOLD, Plan.PRO, until=now)) == 5
    assert counter.series(Level.GOLD)[-1][1] == 8
    series = EventSeries("enum", index=["mode"], retention=Plan.PRO * 3600, max_values=Level.GOLD)
    series.record(mode=Mode.FAST, level=Level.GOLD)
    assert series.count_by("mode", 0, time.time() + 1) == {"7": 1}
    assert series.between(0, time.time() + 1, limit=Level.GOLD)[0]["level"] == 3
    assert series.latest(Plan.PRO)[0]["mode"] == 7
    assert sum(series.counts(time.time() - 60, time.time(), Level.GOLD)) == 1
    bitmap = UniqueBitmap("enum")
    bitmap.mark(Level.GOLD)
    assert bitmap.contains(Level.GOLD, "day") and Level.GOLD in bitmap.day()
    assert bitmap.last(Level.GOLD).count() == 1
    for bad in (lambda: counter.incr(True), lambda: bitmap.mark(False)):
        with pytest.raises(TypeError, match="bool"):
            bad()


def test_the_decorators_and_the_middleware_take_int_subclasses(
    single: Any, with_middleware: Any
) -> None:
    with_middleware.ROOT_URLCONF = "tests.integration.enum_urls"
    client = Client()
    assert client.get("/decorated/").status_code == 200
    assert client.get("/member/").status_code == 200
    assert sender.flush()
    assert not sender.sender.failures  # no write taken for an outage
    assert Counter("enum_hits").total() == 3
    assert UniqueBitmap("enum_buyers").contains(5, "day")
    assert UniqueBitmap("active_users").contains(Plan.PRO, "day")  # the middleware's mark
    events = EventSeries("enum_events", index=["level", "mode"])
    assert events.count_by("level", 0, time.time() + 1) == {"3": 1}
    assert events.count_by("mode", 0, time.time() + 1) == {"7": 1}
    assert view_hits("member") == 1
