"""UniqueBitmap's async twins and its queries' ``acount``/``acontains`` against the sync ones,
on a single node and on a cluster (where combining bitmaps copies operands across slots)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import date, timedelta
from typing import Any

import pytest

from django_redis_metrics import UniqueBitmap
from django_redis_metrics.bitmaps import model as bitmap_aio
from django_redis_metrics.core.periods import Day

from ..conftest import Backend
from .common import raised, run

FIRST = date(2025, 1, 1)
DAYS = 100  # more day keys than one script call reads: unions are built in steps


def when(day: int) -> float:
    moment = FIRST + timedelta(days=day)
    return float((moment - date(1970, 1, 1)).days * 86400 + 43200)


@pytest.mark.parametrize("kind", ["int", "str"])
def test_async_marks_read_back_like_sync_marks(
    backend: Backend, metrics_settings: Callable[..., None], kind: str
) -> None:
    metrics_settings(BITMAP_RETENTION={"day": 2000, "week": 300, "month": 80})

    def user(n: int) -> object:
        return n if kind == "int" else f"user-{n}"

    sync_daily = UniqueBitmap("sync", periods=("day", "week", "month"))
    both = UniqueBitmap("async", periods=("day", "week", "month"))
    marks = [(user(n % 37), when(n % DAYS)) for n in range(0, 600, 7)]
    for user_id, moment in marks:
        sync_daily.mark(user_id, moment)
    first, last = FIRST, FIRST + timedelta(days=DAYS - 1)

    async def main() -> Any:
        for user_id, moment in marks:
            await both.amark(user_id, moment)
        return (
            [await both.acount("day", when(d)) for d in range(0, DAYS, 7)],
            await both.acount("month", when(40)),
            await both.between(first, last).acount(),
            await (both.between(first, last) & sync_daily.month(2025, 2)).acount(),
            await (sync_daily.between(first, last) - both.day(when(3))).acount(),
            [await both.acontains(user(n), "week", when(n)) for n in range(0, 40, 3)],
            [
                await (both.between(first, last) ^ sync_daily.day(when(0))).acontains(user(n))
                for n in range(40)
            ],
            await both.aexists(),
        )

    days, month, span, both_feb, minus, weekly, members, exists = run(main)
    assert days == [sync_daily.count("day", when(d)) for d in range(0, DAYS, 7)] != [0] * 15
    assert month == sync_daily.count("month", when(40)) == both.count("month", when(40))
    assert span == sync_daily.between(first, last).count() == 37
    assert both_feb == (sync_daily.between(first, last) & both.month(2025, 2)).count() > 0
    assert minus == (both.between(first, last) - sync_daily.day(when(3))).count() > 0
    assert weekly == [sync_daily.contains(user(n), "week", when(n)) for n in range(0, 40, 3)]
    assert members == [
        user(n) in (sync_daily.between(first, last) ^ both.day(when(0))) for n in range(40)
    ]
    assert exists and both in UniqueBitmap.objects.all()  # listed by the async follow-up


BAD: list[tuple[str, tuple[Any, ...]]] = [
    ("mark", (True,)),
    ("mark", (-1,)),
    ("mark", (2**40,)),
    ("mark", ("",)),
    ("mark", (1, "yesterday")),
    ("mark", (1.5,)),
    ("count", ("year",)),
    ("count", ("hour",)),
    ("contains", (1, "hour")),
    ("contains", (None, "day")),
]


@pytest.mark.parametrize(("method", "args"), BAD, ids=[f"{m}{a}"[:40] for m, a in BAD])
def test_bad_input_raises_the_sync_error_and_writes_nothing(
    backend: Backend, method: str, args: tuple[Any, ...]
) -> None:
    bitmap = UniqueBitmap("bad", periods=("day",))
    expected = raised(lambda: getattr(bitmap, method)(*args))
    assert raised(lambda: getattr(bitmap, "a" + method)(*args)) == expected
    assert backend.keys() == []


def test_mixing_id_kinds_is_refused_alike(backend: Backend) -> None:
    bitmap = UniqueBitmap("mixed")
    bitmap.mark(7)
    expected = raised(lambda: bitmap.mark("alice"))
    assert raised(lambda: bitmap.amark("alice")) == expected
    assert raised(lambda: UniqueBitmap("other").amark("bob")) == expected
    assert bitmap.count("day") == 1 and UniqueBitmap("other").count("day") == 0


def test_a_query_membership_of_a_bad_id_is_the_sync_error(backend: Backend) -> None:
    query, bad = UniqueBitmap("q").day(), object()
    assert raised(lambda: query.acontains(bad)) == raised(lambda: bad in query)


def test_amark_takes_the_fast_path_once_confirmed_as_mark_does(
    backend: Backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The async path plans a mark as the sync one: its first mark of a bitmap checks all
    (slow path) and its follow-up confirms the bitmap, so later marks take the fast path and
    its bare ``0`` reply. On a single node the async client shares the sync client's server
    identity, so a bitmap the sync path confirmed is fast at once (on a cluster the lazily
    initialized async client names only its seed node: one slow mark more)."""
    remaining = Day.containing(time.time()).end_ts - time.time()
    if remaining < 90:  # marks within MAX_AHEAD of midnight are checked one by one: wait
        time.sleep(remaining + 1)
    offered: list[str] = []
    original = bitmap_aio.calls_steps  # amark sends its call as steps

    def spying(calls: Sequence[Any], *args: Any) -> Any:
        offered.extend(str(call.args[0]) for call in calls)  # "1": the fast path
        return original(calls, *args)

    monkeypatch.setattr(bitmap_aio, "calls_steps", spying)
    fresh, known = UniqueBitmap("fresh"), UniqueBitmap("known")
    known.mark(1)

    async def main() -> None:
        for user in (1, 2, 3):
            await fresh.amark(user)
        await known.amark(2)

    run(main)
    assert offered == ["0", "1", "1", "0" if backend.cluster else "1"]
    assert fresh.count("day") == 3 and known.count("day") == 2
    assert sorted(UniqueBitmap.objects.names()) == ["fresh", "known"]
