"""The cleaner of metrics kept as one hash field per slice (``Statistic``, ``Gauge``), after the
counter cleaner (Redis in Action's ``clean_counters``, listing 5.5).

Writes keep every precision within its samples (``lua/lib/slice_window.lua``); a pass trims
metrics nobody writes any more before their TTL would (HSCAN + HDEL in bounded batches),
compacts a hash that shrank, and forgets an emptied metric only through the atomic
``metric_retire`` script, so a write racing the cleaner is never lost nor left unlisted.
"""

from __future__ import annotations

from . import catalogue
from .cleaning import BATCH_SIZE, CleanupReport, compact, due, listpack_entries, retire
from .connection import RedisClient, get_redis_connection
from .keys import metric_key, to_str
from .sliced import precision_samples
from .timeutil import When, to_timestamp


def clean_sliced(
    kind: str,
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
) -> CleanupReport:
    """One cleaning pass over every metric of ``kind``; ``passes`` selects the precisions due."""
    client = client or get_redis_connection()
    timestamp = to_timestamp(now, "now")
    report = CleanupReport(kind, dry_run=dry_run)
    entries = 0 if dry_run else listpack_entries(client)
    for name in catalogue.names(client, kind, forget=not dry_run):
        report.metrics_checked += 1
        meta_key = metric_key(kind, name, "meta")
        meta = precision_samples(client.hgetall(meta_key))
        if not meta:  # listed but never written, or retired meanwhile
            if not dry_run and catalogue.unregister(client, kind, name, meta_key):
                report.metrics_removed.append(name)
            continue
        emptied = True
        for precision, samples in sorted(meta.items()):
            if not due(precision, passes):
                emptied = False
                continue
            key = metric_key(kind, name, precision)
            cutoff = timestamp - samples * precision
            removed, remaining = _trim(client, key, cutoff, dry_run, batch_size)
            report.items_removed += removed
            if removed:
                report.details.append(f"{kind} {name!r} precision {precision}s: {removed} slices")
                if not dry_run and remaining and compact(client, key, entries):
                    report.details.append(f"{kind} {name!r} precision {precision}s: compacted")
            emptied = emptied and remaining == 0
        if emptied and (dry_run or _retire(client, kind, name, meta_key, sorted(meta))):
            report.metrics_removed.append(name)
            report.details.append(f"{kind} {name!r}: empty, removed from the catalogue")
    return report


def _trim(
    client: RedisClient, key: str, cutoff: float, dry_run: bool, batch_size: int
) -> tuple[int, int]:
    """Delete slices starting at or before ``cutoff``; return (removed, remaining)."""
    old: list[bytes | str] = []
    seen = 0
    for field_name, _ in client.hscan_iter(key, count=batch_size):
        seen += 1
        if int(to_str(field_name)) <= cutoff:
            old.append(field_name)
    if dry_run:
        return len(old), seen - len(old)
    removed = 0
    for index in range(0, len(old), batch_size):
        removed += int(client.hdel(key, *old[index : index + batch_size]))
    return removed, int(client.hlen(key))


def _retire(
    client: RedisClient, kind: str, name: str, meta_key: str, precisions: list[int]
) -> bool:
    data_keys = [metric_key(kind, name, p) for p in precisions]
    return retire(client, kind, name, meta_key, data_keys, precisions)
