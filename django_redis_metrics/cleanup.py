"""Every kind of metric's cleaner in one registry, and the loop ``clean_metrics --loop`` runs.

Each cleaner lives beside its model (``counter/cleaner.py``, ``events/cleaner.py``,
``bitmaps/cleaner.py``, ``estimates/cleaner.py``); stray temporary keys are ``core/cleaning.py``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from .bitmaps.cleaner import clean_bitmaps
from .bitmaps.query import KIND as BITMAP_KIND
from .core.cleaning import TEMP_KIND, Cleaner, CleanupReport, clean_temporary
from .core.connection import REDIS_ERRORS, RedisClient, get_redis_connection
from .core.timeutil import When
from .counter.cleaner import clean_counters
from .counter.model import KIND as COUNTER_KIND
from .estimates.cleaner import clean_estimates
from .estimates.query import KIND as ESTIMATE_KIND
from .events.cleaner import clean_event_series
from .events.keys import KIND as EVENTS_KIND
from .gauge.cleaner import clean_gauges
from .gauge.model import KIND as GAUGE_KIND
from .statistic.cleaner import clean_statistics
from .statistic.model import KIND as STATISTIC_KIND

#: Seconds between passes of ``--loop``; counters are cleaned at about the rate they are written.
PASS_INTERVAL = 60

#: Every kind of metric's cleaner, run in this order by ``clean_all`` and ``clean_metrics``.
CLEANERS: dict[str, Cleaner] = {
    COUNTER_KIND: clean_counters,
    EVENTS_KIND: clean_event_series,
    BITMAP_KIND: clean_bitmaps,
    ESTIMATE_KIND: clean_estimates,
    STATISTIC_KIND: clean_statistics,
    GAUGE_KIND: clean_gauges,
    TEMP_KIND: clean_temporary,
}


def clean_all(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    kinds: Iterable[str] | None = None,
) -> list[CleanupReport]:
    """One pass of every cleaner (or of ``kinds``)."""
    client = client or get_redis_connection()
    selected = list(CLEANERS) if kinds is None else list(kinds)
    return [CLEANERS[kind](client, now=now, passes=passes, dry_run=dry_run) for kind in selected]


def run_loop(
    on_pass: Callable[[int, list[CleanupReport]], None],
    *,
    interval: float = PASS_INTERVAL,
    max_passes: int | None = None,
    dry_run: bool = False,
    kinds: Iterable[str] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], object] = time.sleep,
    on_error: Callable[[int, Exception], None] | None = None,
) -> int:
    """The seed's daemon: a pass about every ``interval`` seconds until told to stop.

    A pass that fails on a Redis error (``REDIS_ERRORS``) is given to ``on_error`` (without it,
    the error propagates), and the loop sleeps and tries again: a daemon outlives a Redis
    restart. ``max_passes`` counts passes tried, failed or not. Returns the passes tried.
    """
    passes = 0
    while not should_stop() and (max_passes is None or passes < max_passes):
        started = time.monotonic()
        try:
            reports = clean_all(passes=passes, dry_run=dry_run, kinds=kinds)
        except REDIS_ERRORS as exc:
            if on_error is None:
                raise
            on_error(passes, exc)
        else:
            on_pass(passes, reports)
        passes += 1
        if (max_passes is not None and passes >= max_passes) or should_stop():
            break
        elapsed = time.monotonic() - started
        sleep(max(interval - elapsed, min(1.0, interval)))
    return passes
