"""The counter cleaner: Redis in Action's ``clean_counters`` (listing 5.5), batched and race-free.

Writes keep every counter within its samples (see ``counter_incr.lua``); the cleaner is for
counters nobody writes any more (it trims them before their TTL would, and forgets them once
empty) and for hashes that grew before (it compacts them). A pass walks the counter catalogue
``batch_size`` names at a time and sends each page as one pipeline of ``counter_clean.lua``
calls, ``CALL_COUNTERS`` counters a call on a single node (one on Redis Cluster, where a call's
keys share a slot). The script does each counter's work atomically on the server: what fell
out of each due precision is known arithmetically from the head the writes keep and from how
far the last pass went (no scan), a hash that shrank is rewritten into Redis's compact
encoding, and a counter whose every precision hash is empty is retired (its meta hash
deleted, and on a single node its catalogue entry removed) in the same step. A writer racing
the cleaner either runs before it (a hash is not empty, nothing is retired) or after it (the
counter is re-created and re-listed): no increment is ever lost and no counter with data is
ever unlisted. On Redis Cluster the catalogue is in another slot: the counters a page retired
are unlisted afterwards by the remove-then-recheck protocol (``catalogue.unregister_many``).

Each script call reads or deletes at most ``field_budget`` slice fields (plus the rewrite of a
compact-sized hash); a call whose budget runs out ends after the counter it is on, and the
rest is sent again. A precision needing more than a whole budget (a hash grown by a version
without write-time retention) is trimmed here with HSCAN and HDEL in ``batch_size`` steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..core import catalogue
from ..core.batch import ScriptCall, run_calls
from ..core.cleaning import BATCH_SIZE, CleanupReport, compact, listpack_entries, retire
from ..core.connection import RedisClient, get_redis_connection
from ..core.keys import catalogue_key, metric_key, to_str
from ..core.retention import MAX_AHEAD
from ..core.sliced import precision_samples
from ..core.timeutil import When, to_timestamp
from ..core.validation import positive_int
from .keys import KIND as COUNTER_KIND
from .model import script

#: Most slice fields one ``counter_clean.lua`` call reads or deletes, all its counters together
#: (about a millisecond of Redis time at most); a hash needing more is trimmed in bounded HSCAN
#: batches.
FIELD_BUDGET = 1000
#: Most counters one ``counter_clean.lua`` call cleans on a single node (on Redis Cluster, one:
#: the keys of a call share a slot). A counter nothing fell out of costs the read of its meta
#: hash, some tens of microseconds of Redis time in all.
CALL_COUNTERS = 20


@dataclass
class _Pass:
    """What every page of one pass shares."""

    client: RedisClient
    timestamp: float
    passes: int
    dry_run: bool
    batch_size: int
    entries: int
    budget: int
    inline: bool
    report: CleanupReport
    #: Counters whose script call left precisions to Python: name -> (precisions, kept).
    leftovers: dict[str, tuple[list[int], bool]] = field(default_factory=dict)


def clean_counters(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
    field_budget: int = FIELD_BUDGET,
) -> CleanupReport:
    """One cleaning pass over every known counter; ``passes`` selects the precisions due.

    ``batch_size`` counters per pipelined round trip (and fields per HSCAN/HDEL step of the
    rare hash too big for one script call); ``field_budget`` bounds one script call's work.
    """
    timestamp = to_timestamp(now, "now")
    batch_size = positive_int(batch_size, "batch_size")
    budget = positive_int(field_budget, "field_budget")
    client = client or get_redis_connection()
    state = _Pass(
        client=client,
        timestamp=timestamp,
        passes=passes,
        dry_run=dry_run,
        batch_size=batch_size,
        entries=listpack_entries(client),
        budget=budget,
        inline=catalogue.inline_catalogue(client),
        report=CleanupReport(COUNTER_KIND, dry_run=dry_run),
    )
    per_call = CALL_COUNTERS if state.inline else 1
    for names in catalogue.pages(client, COUNTER_KIND, batch_size):
        chunks = [names[index : index + per_call] for index in range(0, len(names), per_call)]
        gone, retired = _clean_page(state, chunks)
        if not dry_run:
            catalogue.unregister_many(client, COUNTER_KIND, gone)
            if not state.inline:
                retired = catalogue.unregister_many(client, COUNTER_KIND, retired)
        for name in retired:
            _retired(state.report, name)
        for name, (precisions, kept) in state.leftovers.items():
            _clean_leftovers(state, name, precisions, kept)
        state.leftovers.clear()
    return state.report


def _clean_page(state: _Pass, chunks: list[list[str]]) -> tuple[list[str], list[str]]:
    """Send every chunk as one script call, pipelined, and again what a call left unfinished;
    returns the names without a meta hash and the names retired."""
    gone: list[str] = []
    retired: list[str] = []
    while chunks:
        calls = [_call(state, chunk) for chunk in chunks]
        errors: list[tuple[ScriptCall, Exception]] = []
        replies = run_calls(state.client, calls, errors=errors)
        failed = {id(call): error for call, error in errors}
        unfinished: list[list[str]] = []
        for chunk, call, reply in zip(chunks, calls, replies, strict=True):
            if id(call) in failed:
                if len(chunk) > 1:  # find the one counter that fails (a key of another type)
                    unfinished += [[name] for name in chunk]
                else:
                    state.report.details.append(
                        f"counter {chunk[0]!r}: not cleaned: {failed[id(call)]}"
                    )
                continue
            finished = int(reply[0])
            missing = 0
            for offset in range(1, len(reply), 5):
                index, status, done, left_over, kept = reply[offset : offset + 5]
                name = chunk[int(index) - 1]
                status = int(status)
                _report_done(state.report, name, done)
                if status == -2:
                    gone.append(name)
                    missing += 1
                elif status == 1:
                    retired.append(name)
                if left_over:
                    state.leftovers[name] = ([int(p) for p in left_over], bool(int(kept)))
            state.report.metrics_checked += finished - missing
            if finished < len(chunk):
                unfinished.append(chunk[finished:])
        chunks = unfinished
    return gone, retired


def _call(state: _Pass, names: list[str]) -> ScriptCall:
    keys = [metric_key(COUNTER_KIND, name, "meta") for name in names]
    if state.inline:
        keys.append(catalogue_key(COUNTER_KIND))
    args: list[str | int | float] = [
        int(state.inline),
        state.timestamp,
        MAX_AHEAD,
        int(state.dry_run),
        state.entries,
        state.budget,
        state.passes,
        *names,
    ]
    return ScriptCall(script("counter_clean"), keys, args)


def _report_done(report: CleanupReport, name: str, done: list[Any]) -> None:
    for index in range(0, len(done), 3):
        precision, removed, compacted = (int(x) for x in done[index : index + 3])
        report.items_removed += removed
        report.details.append(f"counter {name!r} precision {precision}s: {removed} slices")
        if compacted:
            report.details.append(f"counter {name!r} precision {precision}s: compacted")


def _retired(report: CleanupReport, name: str) -> None:
    report.metrics_removed.append(name)
    report.details.append(f"counter {name!r}: empty, removed from the catalogue")


def _clean_leftovers(state: _Pass, name: str, precisions: list[int], kept: bool) -> None:
    """The precisions a script call left over, trimmed in bounded HSCAN/HDEL steps; then the
    counter is retired if every one of its hashes is empty (``metric_retire.lua``)."""
    client, report = state.client, state.report
    meta_key = metric_key(COUNTER_KIND, name, "meta")
    meta = precision_samples(client.hgetall(meta_key))
    emptied = not kept
    for precision in sorted(precisions):
        samples = meta.get(precision)
        if samples is None:
            emptied = False
            continue
        key = metric_key(COUNTER_KIND, name, precision)
        cutoff = state.timestamp - samples * precision
        removed, remaining = _trim(client, key, cutoff, state.dry_run, state.batch_size)
        if not state.dry_run:
            if remaining and int(client.pttl(key)) == -1:
                client.pexpire(key, 2 * (samples + 1) * precision * 1000)
            if not remaining:  # the next write gives a re-created hash its TTL
                client.hdel(meta_key, f"e:{precision}")
        report.items_removed += removed
        if removed:
            report.details.append(f"counter {name!r} precision {precision}s: {removed} slices")
            if not state.dry_run and remaining and compact(client, key, state.entries):
                report.details.append(f"counter {name!r} precision {precision}s: compacted")
        emptied = emptied and remaining == 0
    if emptied and (state.dry_run or _retire(client, name, meta_key, sorted(meta))):
        _retired(report, name)


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
    data_keys = [metric_key(COUNTER_KIND, name, p) for p in precisions]
    return retire(client, COUNTER_KIND, name, meta_key, data_keys, precisions)
