"""The estimate cleaner: periods older than ``ESTIMATE_RETENTION`` dropped, emptied estimates
retired from the catalogue (as the bitmap cleaner does for bitmaps)."""

from __future__ import annotations

from ..core import catalogue
from ..core.cleaning import CleanupReport, retire
from ..core.connection import RedisClient, get_redis_connection
from ..core.keys import metric_key, to_str
from ..core.labels.aggregate import member_metric
from ..core.periods import PERIOD_NAMES, period_class
from ..core.timeutil import When, to_timestamp
from .keys import KIND
from .model import DROP_BATCH, UniqueEstimate
from .query import script
from .retention import period_bounds, retention


def retention_cutoff(period_name: str, keep: int, now: float) -> float:
    """The start of the oldest period kept: ``keep`` periods counting the current one."""
    return period_bounds(period_class(period_name).containing(now), keep)[1]


def clean_estimates(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = DROP_BATCH,
) -> CleanupReport:
    """One pass over every listed estimate: drop the periods older than ``ESTIMATE_RETENTION``
    (left behind after it was lowered: writes enforce it otherwise), and retire an estimate
    with no period left. Old periods are found in each estimate's per-period index, never with
    KEYS, and dropped ``batch_size`` at a time."""
    try:
        keep = retention()
    except (TypeError, ValueError) as exc:
        # The system check reports this too, but call_command/clean_all/run_loop skip checks.
        raise type(exc)(f"ESTIMATE_RETENTION: {exc}") from exc
    client = client or get_redis_connection()
    timestamp = to_timestamp(now, "now")
    cutoffs = {p: retention_cutoff(p, keep[p], timestamp) for p in PERIOD_NAMES}
    report = CleanupReport(KIND, dry_run=dry_run)
    for name in catalogue.names(client, KIND, forget=not dry_run):
        report.metrics_checked += 1
        estimate = member_metric(lambda base: UniqueEstimate(base, periods=PERIOD_NAMES), name)
        for period_name, cutoff in cutoffs.items():
            removed = _drop_before(client, estimate, period_name, cutoff, dry_run, batch_size)
            report.items_removed += removed
            if removed:
                report.details.append(f"estimate {name!r}: {removed} {period_name} periods")
        if not dry_run and _retire(client, estimate):
            report.metrics_removed.append(name)
            report.details.append(f"estimate {name!r}: empty, removed from the catalogue")
    return report


def _drop_before(
    client: RedisClient,
    estimate: UniqueEstimate,
    period_name: str,
    cutoff: float,
    dry_run: bool,
    batch_size: int,
) -> int:
    index = estimate.index_key(period_name)
    if dry_run:
        return int(client.zcount(index, "-inf", f"({cutoff}"))
    removed = 0
    while True:
        found = client.zrangebyscore(index, "-inf", f"({cutoff}", start=0, num=batch_size)
        members = [to_str(m) for m in found]  # type: ignore[arg-type]
        if not members:
            return removed
        keys = [metric_key(KIND, estimate.name, period_name, m) for m in members]
        script("estimate_drop")(client, [index, *keys], members)
        removed += len(members)


def _retire(client: RedisClient, estimate: UniqueEstimate) -> bool:
    indexes = [estimate.index_key(p) for p in PERIOD_NAMES]
    return retire(client, KIND, estimate.name, estimate.meta_key, indexes)
