"""Cleanup of old data: the seed's ``clean_counters`` (Redis in Action listing 5.5), race-free.

Each pass walks the counter catalogue in pages, trims every precision to its newest ``samples``
slices with HSCAN + HDEL in bounded batches (no command scans a huge hash at once), and forgets a
counter only through the atomic ``metric_retire`` script, which checks that every slice hash is
empty in the same step that deletes the counter's meta hash. A writer racing the cleaner either
runs before it (the hash is not empty, nothing is retired) or after it (the counter is re-created
and re-listed): no increment is ever lost and no counter with data is ever unlisted.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from . import catalogue, events
from .bitmaps import KIND as BITMAP_KIND
from .bitmaps import clean_bitmaps
from .connection import REDIS_ERRORS, RedisClient, get_redis_connection
from .counter import KIND as COUNTER_KIND
from .counter import precision_samples
from .keys import catalogue_key, metric_key, pattern, to_str
from .scripts import script
from .timeutil import When, to_timestamp

#: The report name of the stray temporary keys' cleaner.
TEMP_KIND = "temporary"
#: Fields fetched per HSCAN step and deleted per HDEL.
BATCH_SIZE = 500
#: Seconds between passes of ``--loop``; counters are cleaned at about the rate they are written.
PASS_INTERVAL = 60


@dataclass
class CleanupReport:
    """What one pass over one kind of metric removed (or, in a dry run, would remove)."""

    kind: str
    dry_run: bool = False
    metrics_checked: int = 0
    items_removed: int = 0
    metrics_removed: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    #: Overrides the standard summary, for cleaners that are not about metrics.
    note: str | None = None

    def summary(self) -> str:
        if self.note is not None:
            return f"{self.kind}: {self.note}"
        verb = "would remove" if self.dry_run else "removed"
        return (
            f"{self.kind}: checked {self.metrics_checked}, {verb} {self.items_removed} old "
            f"entries and {len(self.metrics_removed)} empty metrics"
        )


def due(precision: int, passes: int) -> bool:
    """Whether a precision is cleaned on pass ``passes``: every pass for precisions up to a
    minute, every ``precision // 60`` passes for coarser ones (the seed's cadence)."""
    return passes % max(precision // 60, 1) == 0


def clean_counters(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
) -> CleanupReport:
    """One cleaning pass over every known counter; ``passes`` selects the precisions due."""
    client = client or get_redis_connection()
    timestamp = to_timestamp(now, "now")
    report = CleanupReport(COUNTER_KIND, dry_run=dry_run)
    for name in catalogue.names(client, COUNTER_KIND):
        report.metrics_checked += 1
        _clean_counter(client, name, timestamp, passes, dry_run, batch_size, report)
    return report


def _clean_counter(
    client: RedisClient,
    name: str,
    timestamp: float,
    passes: int,
    dry_run: bool,
    batch_size: int,
    report: CleanupReport,
) -> None:
    meta_key = metric_key(COUNTER_KIND, name, "meta")
    meta = precision_samples(client.hgetall(meta_key))
    if not meta:
        # Listed but never written (or a writer died before listing settled): unlist it.
        if not dry_run and catalogue.unregister(client, COUNTER_KIND, name, meta_key):
            report.metrics_removed.append(name)
        return
    emptied = True
    for precision, samples in sorted(meta.items()):
        if not due(precision, passes):
            emptied = False
            continue
        key = metric_key(COUNTER_KIND, name, precision)
        cutoff = timestamp - samples * precision
        removed, remaining = _trim(client, key, cutoff, dry_run, batch_size)
        report.items_removed += removed
        if removed:
            report.details.append(f"counter {name!r} precision {precision}s: {removed} slices")
        emptied = emptied and remaining == 0
    if emptied and (dry_run or _retire(client, name, meta_key, sorted(meta))):
        report.metrics_removed.append(name)
        report.details.append(f"counter {name!r}: empty, removed from the catalogue")


def _trim(
    client: RedisClient, key: str, cutoff: float, dry_run: bool, batch_size: int
) -> tuple[int, int]:
    """Delete slices starting at or before ``cutoff``; return (removed, remaining)."""
    old: list[bytes | str] = []
    seen = 0
    for field_name, _ in client.hscan_iter(key, count=batch_size):
        seen += 1
        try:
            start = int(to_str(field_name))
        except ValueError:
            continue
        if start <= cutoff:
            old.append(field_name)
    if dry_run:
        return len(old), seen - len(old)
    removed = 0
    for index in range(0, len(old), batch_size):
        removed += int(client.hdel(key, *old[index : index + batch_size]))
    return removed, int(client.hlen(key))


def _retire(client: RedisClient, name: str, meta_key: str, precisions: list[int]) -> bool:
    inline = catalogue.inline_catalogue(client)
    keys = [meta_key, *(metric_key(COUNTER_KIND, name, p) for p in precisions)]
    if inline:
        keys.append(catalogue_key(COUNTER_KIND))
    result = int(script("metric_retire")(client, keys, [name, int(inline), *precisions]))
    if result != 1:
        return False
    return inline or catalogue.unregister(client, COUNTER_KIND, name, meta_key)


def clean_event_series(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = events.PREEN_BATCH,
) -> CleanupReport:
    """One pass over every event series: remove events older than each series' retention
    (hashes, index entries, cached windows), ``batch_size`` events per script call."""
    client = client or get_redis_connection()
    timestamp = to_timestamp(now, "now")
    report = CleanupReport(events.KIND, dry_run=dry_run)
    for name in catalogue.names(client, events.KIND):
        report.metrics_checked += 1
        retention = events.stored_retention(client, name)
        if retention is None:
            meta_key = metric_key(events.KIND, name, "meta")
            if not dry_run and catalogue.unregister(client, events.KIND, name, meta_key):
                report.metrics_removed.append(name)
            continue
        cutoff = timestamp - retention
        if dry_run:
            removed = events.expired_count(client, name, cutoff)
        else:
            removed = events.preen_series(client, name, cutoff, batch_size)
        report.items_removed += removed
        if removed:
            report.details.append(f"event series {name!r}: {removed} events")
    return report


#: Grace period given to a stray temporary key before Redis drops it, in seconds.
STRAY_TEMP_TTL = 60
#: Temporary keys are looked for on every this-many-th pass (a SCAN of the whole keyspace).
TEMP_EVERY_PASSES = 60


def clean_temporary(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
) -> CleanupReport:
    """Give stray temporary keys (a crash left them without a TTL) a short TTL.

    Temporary keys are ``<prefix>:<kind>:{<name>}:tmp:<token>``; names contain no braces, so
    the pattern cannot match a metric's own keys. Found with SCAN in batches, never KEYS; only
    every ``TEMP_EVERY_PASSES`` passes. Keys get ``STRAY_TEMP_TTL`` seconds rather than being
    deleted, so an operation still using one can finish.
    """
    client = client or get_redis_connection()
    report = CleanupReport(TEMP_KIND, dry_run=dry_run)
    if passes % TEMP_EVERY_PASSES:
        report.note = f"not due (looked for every {TEMP_EVERY_PASSES} passes)"
        return report
    match = pattern().removesuffix("*") + "*}:tmp:*"
    keys = list(client.scan_iter(match=match, count=batch_size))
    report.metrics_checked = len(keys)
    for index in range(0, len(keys), batch_size):
        chunk = keys[index : index + batch_size]
        pipe = client.pipeline(transaction=False)
        for key in chunk:
            pipe.ttl(key)
        stray = [key for key, ttl in zip(chunk, pipe.execute(), strict=True) if int(ttl) == -1]
        if stray and not dry_run:
            pipe = client.pipeline(transaction=False)
            for key in stray:
                pipe.expire(key, STRAY_TEMP_TTL)
            pipe.execute()
        report.items_removed += len(stray)
        report.details += [
            f"temporary key {to_str(key)!r}: no TTL, expires in {STRAY_TEMP_TTL} s" for key in stray
        ]
    verb = "would expire" if dry_run else "expired"
    report.note = (
        f"scanned {report.metrics_checked} temporary keys, {verb} "
        f"{report.items_removed} stray ones (left without a TTL) in {STRAY_TEMP_TTL} s"
    )
    return report


Cleaner = Callable[..., CleanupReport]

#: Every kind of metric's cleaner, run in this order by ``clean_all`` and ``clean_metrics``.
CLEANERS: dict[str, Cleaner] = {
    COUNTER_KIND: clean_counters,
    events.KIND: clean_event_series,
    BITMAP_KIND: clean_bitmaps,
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
