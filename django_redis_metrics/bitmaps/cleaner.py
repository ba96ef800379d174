"""The bitmap cleaner: periods older than ``BITMAP_RETENTION`` dropped, empty bitmaps unlisted."""

from __future__ import annotations

from ..conf import conf
from ..core import catalogue
from ..core.batch import ScriptCall, run_calls
from ..core.cleaning import CleanupReport, retire
from ..core.connection import RedisClient, get_redis_connection
from ..core.keys import catalogue_key, metric_key, to_str
from ..core.labels.aggregate import member_metric
from ..core.periods import PERIOD_NAMES, period_class
from ..core.timeutil import When, to_timestamp
from .keys import KIND
from .model import UniqueBitmap, generation_ttl_ms
from .query import script
from .retention import validate_retention


def retention_cutoff(period_name: str, keep: int, now: float) -> float:
    """The start of the oldest period kept: ``keep`` periods counting the current one.

    Never after the current period's start, whatever ``keep`` says: the running period is kept.
    """
    current = period_class(period_name).containing(now)
    return current.shift(-(max(keep, 1) - 1)).start_ts


#: Most periods one ``bitmap_clean.lua`` call drops (each an UNLINK and a ZREM); a bitmap with
#: more to drop is finished in bounded calls of ``bitmap_drop.lua``.
PERIOD_BUDGET = 200


def clean_bitmaps(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = 500,
) -> CleanupReport:
    """One pass over every listed bitmap: drop the periods older than ``BITMAP_RETENTION``.

    Old periods are found in each bitmap's per-period index (a sorted set scored by period
    start), never with KEYS. ``batch_size`` bitmaps a round trip: one pipelined
    ``bitmap_clean.lua`` call each drops what fell out (at most ``PERIOD_BUDGET`` periods) and,
    atomically, retires a bitmap left with no period at all. Cheap enough to run on every pass.
    """
    try:
        retention = validate_retention(conf.BITMAP_RETENTION)
    except (TypeError, ValueError) as exc:
        # The system check reports this too, but call_command/clean_all/run_loop skip checks.
        raise type(exc)(f"BITMAP_RETENTION: {exc}") from exc
    client = client or get_redis_connection()
    timestamp = to_timestamp(now, "now")
    cutoffs = {p: retention_cutoff(p, retention[p], timestamp) for p in PERIOD_NAMES}
    report = CleanupReport(KIND, dry_run=dry_run)
    inline = catalogue.inline_catalogue(client)
    for names in catalogue.pages(client, KIND, batch_size):
        calls = [_call(name, cutoffs, inline, dry_run) for name in names]
        replies = run_calls(client, calls)
        gone: list[str] = []
        retired: list[str] = []
        for name, (status, done, pending) in zip(names, replies, strict=True):
            if int(status) == -2:
                gone.append(name)
                continue
            report.metrics_checked += 1
            for index in range(0, len(done), 2):
                removed = int(done[index + 1])
                report.items_removed += removed
                report.details.append(f"bitmap {name!r}: {removed} {to_str(done[index])} periods")
            if int(pending):
                _finish(client, name, cutoffs, batch_size, report)
            elif int(status) == 1:
                retired.append(name)
        if not dry_run:
            catalogue.unregister_many(client, KIND, gone)
            if not inline:
                retired = catalogue.unregister_many(client, KIND, retired)
        for name in retired:
            _retired(report, name)
    return report


def _bitmap(name: str) -> UniqueBitmap:
    return UniqueBitmap(name, periods=PERIOD_NAMES)


def _call(name: str, cutoffs: dict[str, float], inline: bool, dry_run: bool) -> ScriptCall:
    bitmap = member_metric(_bitmap, name)
    keys = [bitmap.meta_key, bitmap.gen_key, *(bitmap.index_key(p) for p in PERIOD_NAMES)]
    if inline:
        keys.append(catalogue_key(KIND))
    args: list[str | int | float] = [
        name,
        int(inline),
        generation_ttl_ms(),
        int(dry_run),
        PERIOD_BUDGET,
        metric_key(KIND, name, ""),
    ]
    for period_name, cutoff in cutoffs.items():
        args += [period_name, cutoff]
    return ScriptCall(script("bitmap_clean"), keys, args)


def _finish(
    client: RedisClient,
    name: str,
    cutoffs: dict[str, float],
    batch_size: int,
    report: CleanupReport,
) -> None:
    """A bitmap with more old periods than one call's budget: drop the rest in bounded calls,
    then retire it if it is left empty."""
    bitmap = member_metric(_bitmap, name)
    for period_name, cutoff in cutoffs.items():
        removed = _drop_before(client, bitmap, period_name, cutoff, False, batch_size)
        report.items_removed += removed
        if removed:
            report.details.append(f"bitmap {name!r}: {removed} {period_name} periods")
    if _retire(client, bitmap):
        _retired(report, name)


def _retired(report: CleanupReport, name: str) -> None:
    report.metrics_removed.append(name)
    report.details.append(f"bitmap {name!r}: empty, removed from the catalogue")


def _drop_before(
    client: RedisClient,
    bitmap: UniqueBitmap,
    period_name: str,
    cutoff: float,
    dry_run: bool,
    batch_size: int,
) -> int:
    index = bitmap.index_key(period_name)
    if dry_run:
        return int(client.zcount(index, "-inf", f"({cutoff}"))
    removed = 0
    while True:
        found = client.zrangebyscore(index, "-inf", f"({cutoff}", start=0, num=batch_size)
        members = [to_str(m) for m in found]  # type: ignore[arg-type]
        if not members:
            return removed
        keys = [metric_key(KIND, bitmap.name, period_name, m) for m in members]
        script("bitmap_drop")(
            client, [index, bitmap.gen_key, *keys], [generation_ttl_ms(), *members]
        )
        removed += len(members)


def _retire(client: RedisClient, bitmap: UniqueBitmap) -> bool:
    indexes = [bitmap.index_key(p) for p in PERIOD_NAMES]
    return retire(client, KIND, bitmap.name, bitmap.meta_key, indexes)
