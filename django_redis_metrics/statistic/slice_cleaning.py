"""The cleaner of metrics kept as one hash field per slice (``Statistic``, ``Gauge``), after the
counter cleaner (Redis in Action's ``clean_counters``, listing 5.5). It lives with the statistic,
whose layout it was written for; the gauge, written by the same ``slice_window.lua``, uses it too.

Writes keep every precision within its samples (``core/lua/lib/slice_window.lua``); a pass trims
metrics nobody writes any more before their TTL would (a page of metrics in a few pipelined
round trips), compacts a hash that shrank, and forgets an emptied metric only through the atomic
``metric_retire`` script, so a write racing the cleaner is never lost nor left unlisted.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice

from ..core import catalogue
from ..core.batch import ScriptCall, run_calls
from ..core.cleaning import BATCH_SIZE, CleanupReport, due, listpack_entries, retire
from ..core.connection import RedisClient, get_redis_connection
from ..core.drive import drive
from ..core.keys import metric_key, to_str
from ..core.scripts import script
from ..core.sliced import precision_samples
from ..core.steps import Op, chunked_steps
from ..core.timeutil import When, to_timestamp

#: Most hash fields one round trip of a pass reads (``HKEYS``) or deletes, all hashes together.
FIELDS_PER_ROUND_TRIP = 10_000


@dataclass
class _Due:
    """One due precision hash of a metric: what a pass found and did there."""

    precision: int
    key: str
    cutoff: float
    length: int = 0
    old: list[bytes | str] = field(default_factory=list)
    removed: int = 0
    remaining: int = 0
    compacted: bool = False


def clean_sliced(
    kind: str,
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
) -> CleanupReport:
    """One cleaning pass over every metric of ``kind``; ``passes`` selects the precisions due.

    ``batch_size`` metrics a page, each page in a few pipelined round trips: the meta hashes,
    the lengths of the due precision hashes, the fields of those holding at most
    ``batch_size`` (a bigger one, grown by a version without write-time retention, is trimmed
    alone in HSCAN/HDEL steps), then the deletions."""
    client = client or get_redis_connection()
    timestamp = to_timestamp(now, "now")
    report = CleanupReport(kind, dry_run=dry_run)
    entries = 0 if dry_run else listpack_entries(client)
    names = catalogue.names(client, kind, forget=not dry_run)
    for page in _in_runs(names, batch_size):
        _clean_page(client, kind, page, timestamp, passes, dry_run, batch_size, entries, report)
    return report


def _in_runs(names: Iterator[str], size: int) -> Iterator[list[str]]:
    """``names`` in lists of ``size`` (the last one shorter)."""
    while page := list(islice(names, size)):
        yield page


def _clean_page(
    client: RedisClient,
    kind: str,
    names: list[str],
    timestamp: float,
    passes: int,
    dry_run: bool,
    batch_size: int,
    entries: int,
    report: CleanupReport,
) -> None:
    meta_keys = [metric_key(kind, name, "meta") for name in names]
    metas = drive(chunked_steps([Op("hgetall", key) for key in meta_keys]), client)
    dues: dict[str, list[_Due]] = {}
    kept: set[str] = set()
    for name, meta_key, raw in zip(names, meta_keys, metas, strict=True):
        report.metrics_checked += 1
        meta = precision_samples(raw)
        if not meta:  # listed but never written, or retired meanwhile
            if not dry_run and catalogue.unregister(client, kind, name, meta_key):
                report.metrics_removed.append(name)
            continue
        dues[name] = []
        for precision, samples in sorted(meta.items()):
            if not due(precision, passes):
                kept.add(name)
                continue
            key = metric_key(kind, name, precision)
            dues[name].append(_Due(precision, key, timestamp - samples * precision))
    every = [item for items in dues.values() for item in items]
    lengths = drive(chunked_steps([Op("hlen", i.key) for i in every]), client)
    for item, length in zip(every, lengths, strict=True):
        item.length = item.remaining = int(length)
    small = [item for item in every if 0 < item.length <= batch_size]
    for chunk in _by_fields(small):
        _trim_small(client, chunk, dry_run)
    for item in every:
        if item.length > batch_size:
            item.removed, item.remaining = _trim(client, item.key, item.cutoff, dry_run, batch_size)
    shrunk = [item for item in every if item.removed and item.remaining and not dry_run]
    if shrunk:
        compact = script("hash_compact")
        calls = [ScriptCall(compact, [item.key], [entries]) for item in shrunk]
        for item, compacted in zip(shrunk, run_calls(client, calls), strict=True):
            item.compacted = bool(int(compacted))
    for name, items in dues.items():
        _report(client, kind, name, items, name not in kept, dry_run, report)


def _by_fields(items: list[_Due]) -> Iterator[list[_Due]]:
    """``items`` in runs holding at most ``FIELDS_PER_ROUND_TRIP`` fields in all (at least one
    item each): what one round trip reads, and Redis and this process hold at once."""
    run: list[_Due] = []
    fields = 0
    for item in items:
        if run and fields + item.length > FIELDS_PER_ROUND_TRIP:
            yield run
            run, fields = [], 0
        run.append(item)
        fields += item.length
    if run:
        yield run


def _trim_small(client: RedisClient, items: list[_Due], dry_run: bool) -> None:
    """Read the fields of ``items``' hashes (one round trip), then delete those that fell out
    and read what remains (one more)."""
    fields_of = drive(chunked_steps([Op("hkeys", i.key) for i in items]), client)
    for item, fields in zip(items, fields_of, strict=True):
        item.old = [name for name in fields if _is_before(name, item.cutoff)]
        item.removed, item.remaining = len(item.old), item.length - len(item.old)
    trimmed = [item for item in items if item.old and not dry_run]
    commands = [c for i in trimmed for c in (Op("hdel", i.key, *i.old), Op("hlen", i.key))]
    replies = drive(chunked_steps(commands), client)
    for index, item in enumerate(trimmed):
        item.removed, item.remaining = int(replies[2 * index]), int(replies[2 * index + 1])


def _is_before(field_name: bytes | str, cutoff: float) -> bool:
    """Whether a field names a slice starting at or before ``cutoff`` (other fields are kept)."""
    try:
        return int(to_str(field_name)) <= cutoff
    except ValueError:
        return False


def _report(
    client: RedisClient,
    kind: str,
    name: str,
    items: list[_Due],
    all_due: bool,
    dry_run: bool,
    report: CleanupReport,
) -> None:
    """One metric's share of the pass: its report, and its retirement once emptied."""
    for item in items:
        report.items_removed += item.removed
        if item.removed:
            where = f"{kind} {name!r} precision {item.precision}s"
            report.details.append(f"{where}: {item.removed} slices")
            if item.compacted:
                report.details.append(f"{where}: compacted")
    emptied = all_due and all(item.remaining == 0 for item in items)
    precisions = [item.precision for item in items]
    meta_key = metric_key(kind, name, "meta")
    if emptied and (dry_run or _retire(client, kind, name, meta_key, precisions)):
        report.metrics_removed.append(name)
        report.details.append(f"{kind} {name!r}: empty, removed from the catalogue")


def _trim(
    client: RedisClient, key: str, cutoff: float, dry_run: bool, batch_size: int
) -> tuple[int, int]:
    """Delete slices starting at or before ``cutoff``; return (removed, remaining)."""
    old: list[bytes | str] = []
    seen = 0
    for field_name, _ in client.hscan_iter(key, count=batch_size):
        seen += 1
        if _is_before(field_name, cutoff):
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
