"""The event series cleaner: events older than each series' retention, hashes included."""

from __future__ import annotations

from ..conf import conf
from ..core import catalogue
from ..core.batch import run_calls
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
    page: int = catalogue.PAGE,
) -> CleanupReport:
    """One pass over every event series: remove events older than each series' retention
    (hashes, index entries, cached windows), ``batch_size`` events per script call.

    ``page`` series a round trip: one pipelined read of their retentions, then one
    pipelined ``events_preen.lua`` call each; a series with more to remove than one call's
    ``batch_size`` is finished by further calls of its own.
    """
    client = client or get_redis_connection()
    timestamp = to_timestamp(now, "now")
    report = CleanupReport(KIND, dry_run=dry_run)
    default: list[float] = []
    for names in catalogue.pages(client, KIND, page):
        pipe = client.pipeline(transaction=False)
        for name in names:
            pipe.hget(metric_key(KIND, name, "meta"), "retention")
        found: list[tuple[str, float]] = []
        gone: list[str] = []
        for name, raw in zip(names, pipe.execute(), strict=True):
            if raw is None:  # no meta hash: the series expired (or was never configured)
                gone.append(name)
                continue
            text = to_str(raw)
            if text:
                found.append((name, timestamp - float(text)))
            else:
                if not default:
                    default.append(validate_retention(conf.EVENT_RETENTION, "EVENT_RETENTION"))
                found.append((name, timestamp - default[0]))
        if not dry_run:
            catalogue.unregister_many(client, KIND, gone)
        report.metrics_checked += len(found)
        if dry_run:
            pipe = client.pipeline(transaction=False)
            for name, cutoff in found:
                pipe.zcount(metric_key(KIND, name, "time"), "-inf", f"({bound(cutoff)}")
            removed = [int(count) for count in pipe.execute()]
        else:
            calls = [EventSeries(name).preen_call(cutoff, batch_size) for name, cutoff in found]
            removed = []
            for (name, cutoff), reply in zip(found, run_calls(client, calls), strict=True):
                done, pending, _dropped = (int(x) for x in reply)
                if done >= batch_size or pending:
                    done += EventSeries(name).preen_before(
                        cutoff, client=client, batch_size=batch_size
                    )
                removed.append(done)
        for (name, _cutoff), count in zip(found, removed, strict=True):
            report.items_removed += count
            if count:
                report.details.append(f"event series {name!r}: {count} events")
    return report
