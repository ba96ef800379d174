"""EventSeries' async twins against its sync methods, on a single node and on a cluster."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from django_redis_metrics import EventSeries
from django_redis_metrics.core.scripts import MetricsRefused

from ..asyncio_helpers import clockless, raised, run
from ..conftest import Backend

T0 = 1_700_000_000


def events(n: int) -> list[dict[str, Any]]:
    kinds = ["view", "buy", "refund"]
    return [
        {"when": T0 + 13 * i, "type": kinds[i % 3], "total": Decimal(i) / 4, "page": f"/p{i % 7}"}
        for i in range(n)
    ]


@pytest.mark.django_db  # reads reaching past the retention consult the archive
def test_async_writes_read_back_like_sync_writes(backend: Backend) -> None:
    sync = EventSeries("sync", index=["type"])
    both = EventSeries("async", index=["type"])
    sync_ids = [sync.record(T0 - 5, type="view", user=1), *sync.record_many(events(1200))]
    span = (T0 - 60, T0 + 13 * 1200)

    async def main() -> Any:
        first = await both.arecord(T0 - 5, type="view", user=1)
        ids = [first, *await both.arecord_many(events(1200))]
        return (
            ids,
            await both.abetween(*span),
            await both.abetween(*span, limit=1003),
            await both.aearliest(2),
            await both.alatest(1001),
            await both.acount(T0, T0 + 1300),
            await both.asize(),
            await both.acounts(*span, window=600),
            await both.acounts(*span, window=600, cache=False),
            await both.acount_by("type", *span),
            await both.acount_by("page", *span),
            await both.aexists(),
        )

    (ids, every, limited, earliest, latest, count, size, counts, uncached, by_type, by_page,
     exists) = run(main)  # fmt: skip
    assert ids == sync_ids == list(range(1, 1202))
    strip = lambda found: [{k: v for k, v in e.items() if k != "id"} for e in found]  # noqa: E731
    assert strip(every) == strip(sync.between(*span)) and len(every) == 1201
    assert strip(limited) == strip(sync.between(*span, limit=1003)) and len(limited) == 1003
    assert strip(earliest) == strip(sync.earliest(2))
    assert strip(latest) == strip(sync.latest(1001))
    assert count == sync.count(T0, T0 + 1300) == 101
    assert size == sync.size() == 1201
    assert counts == uncached == sync.counts(*span, window=600) == both.counts(*span, window=600)
    assert by_type == sync.count_by("type", *span) == {"view": 401, "buy": 400, "refund": 400}
    assert by_page == sync.count_by("page", *span)
    assert exists
    assert both in EventSeries.objects.all()  # listed on the cluster too, by the async follow-up


BAD: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("record", (), {}),
    ("record", (), {"type": object()}),
    ("record", ("later",), {"type": "x"}),
    ("record_many", ([{"type": "x"}, {"type": 1 + 2j}],), {}),
    ("record_many", (["not a mapping"],), {}),
    ("between", (T0, T0 + 1), {"limit": 0}),
    ("latest", (-1,), {}),
    ("counts", (T0, T0 + 10**9), {"window": 1}),
    ("counts", (T0, T0 + 10), {"window": 0}),
    ("count_by", (5, T0, T0 + 1), {}),
    ("count", (T0 + 1, T0), {}),
]


@pytest.mark.parametrize(
    ("method", "args", "kwargs"), BAD, ids=[f"{m}{a}{k}"[:40] for m, a, k in BAD]
)
def test_bad_input_raises_the_sync_error_and_writes_nothing(
    backend: Backend, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    series = EventSeries("bad", index=["type"])
    expected = raised(lambda: getattr(series, method)(*args, **kwargs))
    assert raised(lambda: getattr(series, "a" + method)(*args, **kwargs)) == expected
    assert backend.keys() == []


def test_a_refusal_is_the_same_metrics_refused(backend: Backend) -> None:
    """A time ahead of the Redis clock is refused by the script itself (``DRM_REFUSED``)."""
    series = EventSeries("ahead")
    far = T0 + 10**8
    with pytest.raises(MetricsRefused) as sync_refusal:
        series.record(far, type="x")
    with pytest.raises(MetricsRefused) as async_refusal:
        run(lambda: series.arecord(far, type="x"))
    assert clockless((MetricsRefused, str(async_refusal.value))) == clockless(
        (MetricsRefused, str(sync_refusal.value))
    )
    assert backend.keys() == []


def test_arecord_takes_no_batch_nor_defer(single: Backend) -> None:
    with pytest.raises(TypeError, match="arecord\\(\\) takes no 'defer'"):
        run(lambda: EventSeries("e").arecord(defer=True, type="x"))
