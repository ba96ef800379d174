"""The counter cleaner: Redis in Action's ``clean_counters`` (listing 5.5), race-free.

Writes keep every counter within its samples (see ``counter_incr.lua``); the cleaner is for
counters nobody writes any more (it trims them before their TTL would) and for hashes that grew
before (it compacts them). Each pass walks the counter catalogue in pages, trims every precision
to its newest ``samples`` slices before now with HSCAN + HDEL in bounded batches (no command
scans a huge hash at once), rewrites a hash that shrank into Redis's compact encoding (Redis
never does it by itself), and forgets a counter only through the atomic ``metric_retire``
script, which checks that every slice hash is empty in the same step that deletes the counter's
meta hash. A writer racing the cleaner either
runs before it (the hash is not empty, nothing is retired) or after it (the counter is re-created
and re-listed): no increment is ever lost and no counter with data is ever unlisted.
"""

from __future__ import annotations

from ..core import catalogue
from ..core.cleaning import BATCH_SIZE, CleanupReport, compact, due, listpack_entries
from ..core.connection import RedisClient, get_redis_connection
from ..core.keys import catalogue_key, metric_key, to_str
from ..core.scripts import script
from ..core.timeutil import When, to_timestamp
from .model import KIND as COUNTER_KIND
from .model import precision_samples


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
    entries = 0 if dry_run else listpack_entries(client)
    for name in catalogue.names(client, COUNTER_KIND, forget=not dry_run):
        report.metrics_checked += 1
        _clean_counter(client, name, timestamp, passes, dry_run, batch_size, entries, report)
    return report


def _clean_counter(
    client: RedisClient,
    name: str,
    timestamp: float,
    passes: int,
    dry_run: bool,
    batch_size: int,
    entries: int,
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
        if remaining and not dry_run and int(client.pttl(key)) == -1:
            # A hash an earlier version wrote, or re-created by a write just after this
            # cleaner emptied it: it gets the TTL writes give it (twice its retention).
            client.pexpire(key, 2 * (samples + 1) * precision * 1000)
        report.items_removed += removed
        if removed:
            report.details.append(f"counter {name!r} precision {precision}s: {removed} slices")
            if not dry_run and remaining and compact(client, key, entries):
                report.details.append(f"counter {name!r} precision {precision}s: compacted")
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
