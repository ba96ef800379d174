"""Writes from view code with ``defer=True``: checked at once, queued like the middleware's,
never waiting on Redis nor failing the request while it is away, stored exactly once later."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from django_redis_metrics import Counter, EventSeries, UniqueBitmap
from django_redis_metrics.core.batch import Batch
from django_redis_metrics.sending import sender
from django_redis_metrics.testing import RedisServer

from ..django_site import view_hits
from ..integration.views import deferred_buyers, deferred_orders, deferred_signups

pytestmark = pytest.mark.django_db


def recorded() -> tuple[int, int, int]:
    return (
        deferred_signups.total(),
        deferred_orders.count(0, 2**33),
        deferred_buyers.count("day"),
    )


def test_view_code_records_fire_and_forget(single: Any, with_middleware: Any) -> None:
    for user in (1, 2, 2):
        assert Client().get("/deferred/", {"user": user}).status_code == 200
    assert sender.flush()
    assert recorded() == (3, 3, 2)
    assert deferred_orders.count_by("product", 0, 2**33) == {"book": 3}
    assert view_hits("deferred") == 3  # the middleware's own writes too


def test_view_code_keeps_its_writes_while_redis_is_away(
    with_middleware: Any, settings: Any
) -> None:
    server = RedisServer(appendonly=True).start()
    try:
        settings.DJANGO_REDIS_METRICS = {
            "CONNECTION": server.url,
            "PREFIX": "deferred",
            "FAIL_OPEN_TIMEOUT": 0.2,
        }
        server.kill()
        for user in (1, 2, 3):
            assert Client().get("/deferred/", {"user": user}).status_code == 200
        with pytest.raises(Exception, match="Connection refused"):
            deferred_signups.incr()  # the direct method raises
        server.restart()
        assert sender.flush()
        assert recorded() == (3, 3, 3)
    finally:
        server.cleanup()


@pytest.mark.parametrize(
    ("write", "error", "match"),
    [
        (lambda: Counter("c").incr("1", defer=True), TypeError, "count"),
        (lambda: Counter("c").incr(2**60, defer=True), ValueError, "2\\*\\*53"),
        (lambda: Counter("c").incr(defer="yes"), TypeError, "defer must be True or False"),
        (lambda: Counter("c").incr(defer=True, batch=Batch()), TypeError, "not both"),
        (lambda: EventSeries("e").record(defer=True), ValueError, "at least one field"),
        (lambda: EventSeries("e").record(defer=True, x=object()), TypeError, "Field .x."),
        (lambda: UniqueBitmap("u").mark(-1, defer=True), ValueError, "bit offset"),
        (lambda: UniqueBitmap("u").mark(1.5, defer=True), TypeError, "user id"),
        (lambda: UniqueBitmap("u").mark(1, when="now", defer=True), TypeError, "when"),
    ],
)
def test_bad_input_raises_at_once_and_queues_nothing(
    single: Any, fresh_state: None, write: Any, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        write()
    assert sender.sender.pending() == 0


def test_deferred_writes_share_the_senders_round_trips(
    single: Any, fresh_state: None, metrics_settings: Any
) -> None:
    metrics_settings(SEND_DELAY=60.0)  # the sender waits for more until flushed
    counter = Counter("merged", precisions=[60])
    for _ in range(5):
        assert counter.incr(when=1_700_000_000, defer=True) is None
    EventSeries("merged_events").record(defer=True, kind="a")
    assert sender.flush()
    assert counter.total() == 5
    assert sender.sender.round_trips == 1
