"""``aincr`` takes the transaction fast path of ``incr`` (counter/fast.py ``atry_incr``) for the
slices a script call of this process opened, on a plain single node, with its guarantees: a
missing key repaired, an error reply taken back and refused by the script, sync and async
writers continuing each other's slices."""

from __future__ import annotations

from typing import Any

import pytest

from django_redis_metrics import Counter

from ..asyncio_helpers import run
from .test_counter_fast import calls, general_incr, state

T0 = 1_700_000_040  # a fixed epoch second, a multiple of 60, far behind any clock
PRECISIONS = [1, 60, 3600]


def test_async_increments_of_opened_slices_are_transactions(backend):
    counter = Counter("ahot", precisions=PRECISIONS)

    async def opened() -> None:
        await counter.aincr(when=T0)

    async def steady() -> None:
        for _ in range(5):
            await counter.aincr(2, when=T0 + 0.5)

    run(opened)
    backend.client.config_resetstat()
    run(steady)
    stats = calls(backend)
    if backend.cluster:
        assert "exec" not in stats
    else:
        assert stats["exec"] == 5 and "evalsha" not in stats
    counter.incr(when=T0 + 0.7)  # the sync client continues the async one's slices
    assert counter.series(1) == [(T0, 12)] and counter.lifetime_total() == 12


def test_an_async_missing_key_is_repaired_with_its_ttl(single):
    counter = Counter("aevicted", precisions=PRECISIONS, samples=10)
    reference = Counter("areference", precisions=PRECISIONS, samples=10)

    async def first() -> None:
        await counter.aincr(3, when=T0)

    async def second() -> None:
        await counter.aincr(2, when=T0 + 0.5)

    run(first)
    single.client.delete(counter.key(1))
    run(second)  # the transaction finds the key missing: the repair follows
    general_incr(reference, 3, T0)
    single.client.delete(reference.key(1))
    general_incr(reference, 2, T0 + 0.5)
    got, expected = state(single, counter), state(single, reference)
    for precision in PRECISIONS:
        assert got[str(precision)] == expected[str(precision)]
        assert 0 < single.client.pttl(counter.key(precision)) <= 2 * 11 * precision * 1000


def test_an_async_error_reply_is_taken_back_and_refused(single):
    counter = Counter("aclash", precisions=[1, 60])

    async def first() -> None:
        await counter.aincr(when=T0)

    async def again() -> Any:
        try:
            await counter.aincr(when=T0)
        except Exception as error:
            return error
        return None

    run(first)
    single.client.delete(counter.key(60))
    single.client.set(counter.key(60), "a string")
    before = {key: single.client.dump(key) for key in single.keys()}
    error = run(again)
    assert "WRONGTYPE" in str(error)
    assert {key: single.client.dump(key) for key in single.keys()} == before


@pytest.mark.parametrize("count", [0, 3])
def test_an_async_count_of_zero_or_a_new_slice_goes_by_the_script(single, count):
    counter = Counter(f"azero{count}", precisions=[1])

    async def writes() -> None:
        await counter.aincr(1, when=T0)
        await counter.aincr(count, when=T0)  # 0 never takes the transaction
        await counter.aincr(1, when=T0 + 1)  # a new slice

    single.client.config_resetstat()
    run(writes)
    stats = calls(single)
    assert stats.get("exec", 0) == (0 if count == 0 else 1)  # only 3 at T0 took it
    assert counter.series(1) == [(T0, 1 + count), (T0 + 1, 1)]
