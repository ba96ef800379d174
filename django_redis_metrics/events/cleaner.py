"""The event series cleaner: events older than each series' retention, hashes included."""

from __future__ import annotations

from ..conf import conf
from ..core import catalogue
from ..core.cleaning import CleanupReport
from ..core.connection import RedisClient, get_redis_connection
from ..core.keys import metric_key, to_str
from ..core.timeutil import When, to_timestamp
from .codec import bound
from .keys import KIND
from .model import EventSeries, validate_retention


def clean_event_series(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = EventSeries.PREEN_BATCH,
) -> CleanupReport:
    """One pass over every event series: remove events older than each series' retention
    (hashes, index entries, cached windows), ``batch_size`` events per script call."""
    client = client or get_redis_connection()
    timestamp = to_timestamp(now, "now")
    report = CleanupReport(KIND, dry_run=dry_run)
    for name in catalogue.names(client, KIND, forget=not dry_run):
        report.metrics_checked += 1
        retention = stored_retention(client, name)
        if retention is None:
            meta_key = metric_key(KIND, name, "meta")
            if not dry_run and catalogue.unregister(client, KIND, name, meta_key):
                report.metrics_removed.append(name)
            continue
        cutoff = timestamp - retention
        if dry_run:
            removed = expired_count(client, name, cutoff)
        else:
            removed = EventSeries(name).preen_before(cutoff, client=client, batch_size=batch_size)
        report.items_removed += removed
        if removed:
            report.details.append(f"event series {name!r}: {removed} events")
    return report


def stored_retention(client: RedisClient, name: str) -> float | None:
    """The retention the series' writers recorded (else ``EVENT_RETENTION``); None if no meta."""
    raw = client.hget(metric_key(KIND, name, "meta"), "retention")
    if raw is None:
        return None
    text = to_str(raw)
    if text:
        return float(text)
    return validate_retention(conf.EVENT_RETENTION, "EVENT_RETENTION")


def expired_count(client: RedisClient, name: str, cutoff: float) -> int:
    """How many events of ``name`` a preen at ``cutoff`` would remove (for dry runs)."""
    return int(client.zcount(metric_key(KIND, name, "time"), "-inf", f"({bound(cutoff)}"))
