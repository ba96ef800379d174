"""Times for tests that write or read data in a period: never ahead of the present.

A write stamped ahead of the Redis server's clock is refused (``MetricsRefused``), so a test
that writes at "the start of today plus an hour" fails for the hour after every midnight, and
"this week's start plus an hour" every Monday. :func:`moment` builds such a time and clips it
to the test's single reading of the clock; ``tests/test_clock_discipline.py`` keeps every test
on it.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

from django_redis_metrics.core.periods import Period

#: How far into a second :func:`next_second` wakes: a counter's write at the present opens its
#: 1 s slice without the script only once the client proves the Redis clock reached it, from a
#: reading whose reply may take this long on a loaded machine (over TLS too).
INTO_THE_SECOND = 0.2


def moment(period: Period, offset: float, *, now: float) -> float:
    """``offset`` seconds into ``period``, or ``now`` when that lies ahead of it (``period`` is
    the current one and began less than ``offset`` ago).

    ``now`` is the test's one reading of the clock (``time.time()``, read once). A period that
    has not begun by ``now``, or an offset past the period's end, is a mistake in the test: a
    ``ValueError`` says so.
    """
    if period.start_ts > now:
        raise ValueError(f"{period!r} begins after now ({now}): no moment of it is past")
    when = period.start_ts + offset
    if not offset >= 0 or when >= period.end_ts:
        raise ValueError(f"offset {offset} s lies outside {period!r}")
    return min(when, now)


def next_second() -> float:
    """Sleep into the next second of the clock (:data:`INTO_THE_SECOND` past its start); that
    instant."""
    now = time.time()
    time.sleep(math.ceil(now) - now + INTO_THE_SECOND)
    return time.time()


def live_instants(seconds: int, pause: float) -> Iterator[float]:
    """Instants of the present to write at, ``pause`` apart, in each of the next ``seconds``
    seconds of the clock, from :data:`INTO_THE_SECOND` into it to as long before its end.

    Live writers that race to open a second's slices without the script must each open it
    where the client can prove the Redis clock reached it: a writer whose first write of a
    second lands within a few milliseconds of its turn goes by the script, as it should, and
    a test of the opening path would then see none."""
    for _ in range(seconds):
        second = math.floor(next_second())
        while (now := time.time()) < second + 1 - INTO_THE_SECOND:
            yield now
            time.sleep(pause)
