"""Retention at write time: the bounds every kind of metric shares, and its keys' TTLs.

Every write script enforces its metric's retention as it writes (one round trip, atomic, so it
races safely with other writers and with ``clean_metrics``) and gives each key it writes a TTL
derived from that retention: memory stays flat with no cleaner running, and a metric nobody
writes any more disappears by itself. The Lua side is ``core/lua/lib/slices.lua`` (metrics kept
in epoch-aligned slices: counters), ``core/lua/lib/clock.lua`` (the Redis clock, the reference
of every writer) and ``events/lua/lib/prune.lua``; calendar periods (bitmaps) use
:func:`period_retention`.

Retention follows the newest data written, never ahead of the Redis server's clock: data older
than the retention before it is not stored, and a write stamped more than :data:`MAX_AHEAD`
seconds after that clock is refused (``MetricsRefused``), since it would move the window forward
and drop data that is still wanted.
"""

from __future__ import annotations

import math

from .periods import Period, period_class
from .timeutil import EARLIEST, LATEST
from .validation import integer, iterable, seconds, shown

#: Seconds a write may be stamped ahead of the Redis server's clock (clock skew between the
#: site's servers and Redis); later writes are refused.
MAX_AHEAD = 60
#: Shortest retention of any metric, in seconds: below it nothing would be kept (and a
#: retention such as 1e-300 is a mistake, not a wish).
MIN_RETENTION = 1
#: Longest retention of any metric, in seconds (100 years): TTLs and windows stay exact.
MAX_RETENTION = 100 * 366 * 86400
#: Coarsest precision of a metric kept in slices: 366 days.
MAX_PRECISION = 366 * 86400
#: Most slices kept per precision. Below the server's ``hash-max-listpack-entries`` (512 by
#: default) a precision's hash stays in the compact listpack encoding (about 7 bytes per
#: slice); above it, a hashtable (about 60 bytes per slice). A write after a pause deletes up
#: to this many fields, so it also bounds the work of one write.
MAX_SAMPLES = 10_000
#: Most precisions of one metric (each is a hash written by every write).
MAX_PRECISIONS = 64
#: The ``hash-max-listpack-entries`` assumed only where the server refuses ``CONFIG GET`` (a
#: managed Redis, an ACL): a cautious guess below Redis's own default of 512, since managed
#: services often lower it; a wrong guess costs a compaction skipped or a rewrite that stays a
#: hashtable, never data. Everywhere else the server's value is read
#: (``core.cleaning.listpack_entries``).
LISTPACK_ENTRIES = 128


def validate_retention(value: object, what: str = "retention") -> float:
    """A number of seconds in ``[MIN_RETENTION, MAX_RETENTION]``."""
    number = seconds(value, what)
    if number < MIN_RETENTION:
        raise ValueError(f"{what} must be at least {MIN_RETENTION} second, not {shown(value)}.")
    if number > MAX_RETENTION:
        raise ValueError(
            f"{what} must be at most {MAX_RETENTION} seconds (100 years), not {shown(value)}."
        )
    return number


def validate_precisions(precisions: object) -> tuple[int, ...]:
    """Sorted unique integer precisions (seconds) in ``[1, MAX_PRECISION]``, or a clear error."""
    values = tuple(iterable(precisions, "precisions", "seconds"))
    if not values:
        raise ValueError("precisions must name at least one precision.")
    if len(values) > MAX_PRECISIONS:
        raise ValueError(f"A metric keeps at most {MAX_PRECISIONS} precisions, not {len(values)}.")
    checked = {integer(value, "each precision", minimum=1, unit="seconds") for value in values}
    if max(checked) > MAX_PRECISION:
        raise ValueError(
            f"A precision must be at most {MAX_PRECISION} seconds (366 days), not {max(checked)}."
        )
    return tuple(sorted(checked))


def validate_samples(samples: object) -> int:
    """Slices kept per precision: an int in ``[1, MAX_SAMPLES]``."""
    return integer(samples, "samples", minimum=1, maximum=MAX_SAMPLES)


def ttl_ms(seconds: float) -> int:
    """A TTL in whole milliseconds, never shorter than ``seconds``."""
    return max(math.ceil(seconds * 1000), 1)


def period_retention(period: Period, keep: int) -> tuple[int, float]:
    """``(expire_at_ms, oldest_kept_start)`` of a calendar ``period`` when ``keep`` periods of
    its kind are kept, counting the current one: its key expires when the period ``keep``
    periods later begins (the moment the cleaner would drop it), and a mark into ``period``
    leaves the periods starting before ``oldest_kept_start`` behind. Clamped to the calendar
    ``timeutil`` accepts."""
    try:
        expires = period.shift(keep).start_ts
    except (OverflowError, ValueError):
        expires = float(LATEST)
    try:
        oldest = period.shift(-(keep - 1)).start_ts
    except (OverflowError, ValueError):
        oldest = float(EARLIEST)
    return math.ceil(expires * 1000), oldest


#: Most calendar periods of each kind a metric keeps: about 100 years of each.
MAX_PERIODS_KEPT: dict[str, int] = {"hour": 876_600, "day": 36_525, "week": 5_218, "month": 1_200}


def validate_periods_kept(value: object) -> dict[str, int]:
    """Period name -> number of periods kept (counting the current one), each in
    ``[1, MAX_PERIODS_KEPT]``: the retention of a metric kept per calendar period."""
    if not isinstance(value, dict):
        raise TypeError(f"must be a dict of period name -> periods kept, not {shown(value)}.")
    kept: dict[str, int] = {}
    for name, keep in value.items():
        period_class(name)
        number = integer(keep, f"the number of {name} periods kept", minimum=1)
        if number > MAX_PERIODS_KEPT[name]:
            raise ValueError(
                f"the number of {name} periods kept must be at most {MAX_PERIODS_KEPT[name]} "
                f"(about 100 years), not {number}."
            )
        kept[str(name)] = number
    return kept
