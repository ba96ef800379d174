"""Input that could hurt Redis is refused: a ValueError or TypeError (subclasses allowed) whose
message says what was wrong, and the keyspace left byte for byte as it was."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from django_redis_metrics import (
    Counter,
    EventSeries,
    Gauge,
    Statistic,
    UniqueBitmap,
    UniqueEstimate,
)
from django_redis_metrics.core.retention import MAX_AHEAD

Refusal = tuple[str, Callable[[], Any], type[Exception], str]

REFUSALS: list[Refusal] = [
    ("precision 2**63", lambda: Counter("c", precisions=[2**63]).incr(), ValueError, "366 days"),
    ("samples 2**63", lambda: Counter("c", samples=2**63).incr(), ValueError, "at most 10000"),
    ("a count beyond 2**53", lambda: Counter("c").incr(2**60), ValueError, "2\\*\\*53"),
    ("a count of True", lambda: Counter("c").incr(True), TypeError, "bool"),
    (
        "a slice past the clock",
        lambda: Counter("c").incr(when=time.time() + MAX_AHEAD + 60),
        ValueError,
        "ahead of the Redis server clock",
    ),
    ("retention 10**400", lambda: EventSeries("e", retention=10**400), ValueError, "seconds"),
    ("retention 200 years", lambda: EventSeries("e", retention=2e10), ValueError, "100 years"),
    ("max_values 10**9", lambda: EventSeries("e", max_values=10**9), ValueError, "at most"),
    (
        "a 10 MB indexed value",
        lambda: EventSeries("e", index=["file"]).record(file="x" * 10_000_000),
        ValueError,
        "names a key",
    ),
    (
        "a 1 MB field value",
        lambda: EventSeries("e").record(body="x" * 1_000_000),
        ValueError,
        "MAX_VALUE_BYTES",
    ),
    (
        "an event past the clock",
        lambda: EventSeries("e").record(time.time() + 3600, kind="x"),
        ValueError,
        "ahead",
    ),
    ("user id 2**32 - 1", lambda: UniqueBitmap("u").mark(2**32 - 1), ValueError, "MAX_USER_ID"),
    ("user id 2**27", lambda: UniqueBitmap("u").mark(2**27), ValueError, "MAX_USER_ID"),
    ("user id -1", lambda: UniqueBitmap("u").mark(-1), ValueError, "MAX_USER_ID"),
    (
        "BITMAP_RETENTION days 10**6",
        lambda: UniqueBitmap("u").mark(1),
        ValueError,
        "at most 36525",
    ),
    ("a statistic of NaN", lambda: Statistic("s").record(float("nan")), ValueError, "finite"),
    ("a statistic of 2**60", lambda: Statistic("s").record(2**60), ValueError, "2\\*\\*53"),
    (
        "a statistic past the clock",
        lambda: Statistic("s").record(1, when=time.time() + MAX_AHEAD + 120),
        ValueError,
        "ahead of the Redis server clock",
    ),
    ("a gauge of infinity", lambda: Gauge("g").set(float("inf")), ValueError, "finite"),
    (
        "a gauge past the clock",
        lambda: Gauge("g").set(1, when=time.time() + MAX_AHEAD + 60),
        ValueError,
        "ahead of the Redis server clock",
    ),
    # A `when` beyond any float: a ValueError like any other out-of-range time, not an
    # OverflowError, on every kind.
    ("incr at 10**400", lambda: Counter("c").incr(1, when=10**400), ValueError, "years 2"),
    (
        "record at 10**400",
        lambda: EventSeries("e").record(10**400, kind="x"),
        ValueError,
        "years 2",
    ),
    ("mark at -10**400", lambda: UniqueBitmap("u").mark(1, when=-(10**400)), ValueError, "years"),
    ("add at 10**400", lambda: UniqueEstimate("v").add(1, when=10**400), ValueError, "years 2"),
    ("a value at 10**400", lambda: Statistic("s").record(1, 10**400), ValueError, "years 2"),
    ("set at 10**400", lambda: Gauge("g").set(1, when=10**400), ValueError, "years 2"),
]


def keyspace(backend: Any) -> dict[str, tuple[bytes, bool]]:
    """Every key with its serialized value, and whether it has a TTL."""
    client = backend.client
    return {key: (client.dump(key), client.pttl(key) > 0) for key in backend.keys()}


@pytest.mark.parametrize(
    ("label", "action", "error", "says"), REFUSALS, ids=[r[0] for r in REFUSALS]
)
def test_each_refusal_writes_nothing(
    backend: Any,
    metrics_settings: Any,
    label: str,
    action: Callable[[], Any],
    error: type[Exception],
    says: str,
) -> None:
    Counter("c").incr()
    EventSeries("e", index=["file"]).record(file="a", body="b")
    UniqueBitmap("u").mark(1)
    if label.startswith("BITMAP_RETENTION"):
        metrics_settings(BITMAP_RETENTION={"day": 10**6})
    before = keyspace(backend)
    with pytest.raises(error, match=says):
        action()
    assert keyspace(backend) == before


HUGE = "x" * 1_000_000
#: Calls refusing a huge value: the message names the value by its start, never all of it.
HUGE_REFUSALS: list[tuple[str, Callable[[], Any]]] = [
    ("incr(count=str)", lambda: Counter("c").incr(HUGE)),
    ("incr(when=str)", lambda: Counter("c").incr(1, when=HUGE)),
    ("incr(count=int)", lambda: Counter("c").incr(10**5000)),
    ("record(value=str)", lambda: Statistic("s").record(HUGE)),  # type: ignore[arg-type]
    ("record(value=int)", lambda: Statistic("s").record(10**5000)),
    ("set(value=bytes)", lambda: Gauge("g").set(HUGE.encode())),  # type: ignore[arg-type]
    ("counter named by bytes", lambda: Counter(HUGE.encode())),  # type: ignore[arg-type]
]


@pytest.mark.parametrize(("label", "action"), HUGE_REFUSALS, ids=[r[0] for r in HUGE_REFUSALS])
def test_a_refusal_of_a_huge_value_has_a_short_message(
    backend: Any, label: str, action: Callable[[], Any]
) -> None:
    before = keyspace(backend)
    with pytest.raises((TypeError, ValueError)) as refused:
        action()
    assert len(str(refused.value)) < 300, str(refused.value)[:500]
    assert keyspace(backend) == before
