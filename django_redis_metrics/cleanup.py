"""Every registered kind's cleaner, and the loop ``clean_metrics --loop`` runs.

Each cleaner lives beside its model (``counter/cleaner.py``, ``events/cleaner.py``, ...) and is
registered with its kind (``kinds.py``); stray temporary keys are ``core/cleaning.py``'s.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Mapping

from .core.cleaning import TEMP_KIND, Cleaner, CleanupReport, clean_temporary
from .core.connection import REDIS_ERRORS, RedisClient, get_redis_connection
from .core.timeutil import When
from .kinds import registered

#: Seconds between passes of ``--loop``; counters are cleaned at about the rate they are written.
PASS_INTERVAL = 60


def cleaners() -> dict[str, Cleaner]:
    """Every registered kind's cleaner, in the registry's order, then the temporary keys'."""
    found = {kind.name: kind.cleaner for kind in registered()}
    found[TEMP_KIND] = clean_temporary
    return found


class _Cleaners(Mapping[str, Cleaner]):
    """:func:`cleaners`, read on every access: a kind registered later is cleaned too."""

    def __getitem__(self, kind: str) -> Cleaner:
        return cleaners()[kind]

    def __iter__(self) -> Iterator[str]:
        return iter(cleaners())

    def __len__(self) -> int:
        return len(cleaners())


#: Every kind of metric's cleaner by kind name, run in this order by ``clean_all`` and
#: ``clean_metrics``: the registry's order, then the stray temporary keys.
CLEANERS: Mapping[str, Cleaner] = _Cleaners()


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
    known = cleaners()
    selected = list(known) if kinds is None else list(kinds)
    return [known[kind](client, now=now, passes=passes, dry_run=dry_run) for kind in selected]


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
