"""Cleaner passes: milliseconds per metric of one pass with this checkout and with the package
at an earlier commit (default: main before the batched cleaner), on the same private Redis in
the same run.

    python benchmarks/bench_cleaner.py [--counters 100,1000,10000] [--series 100,1000]
        [--bitmaps 100,1000] [--statistics 100,1000] [--baseline REF | --no-baseline]
        [--foreign 900000 --foreign-counters 100 --foreign-baseline REF]

Each size gets fresh metrics under two prefixes, written the same way by this checkout (the
write scripts are the same at both commits), one prefix cleaned by this checkout in this
process, the other by the baseline in a subprocess. Counters (default precisions and samples)
are 80 % busy (written over the last 30 minutes), 10 % stopped 10 minutes ago (their fine
precisions have slices to trim) and 10 % last written 200 days ago (every slice falls out:
retired). Event series (one hour retention, 20 events each) are cleaned 20 minutes after they
were written: 10 % then hold only expired events. Bitmaps (20 users each; hour, day, week and
month periods) are cleaned 12 hours after they were marked: 90 % were marked over the last 20
hours, 10 % from 40 hours before (their hours fall out: the default retention keeps 48).
Statistics (default precisions and samples, 120 values each, 15 s apart) are busy, stopped
or retired like the counters.
The first pass does all that work; the second pass, over what is left, is the steady state of
``clean_metrics --loop``. For each pass the server's own figures are printed too: the CPU time
of its main thread per metric (``INFO cpu``; the reader's reads included, the same on both
sides) and its slowest command (``SLOWLOG``: how long a pass may hold Redis). Meanwhile a
reader in another process times ``Counter.recent(60)`` (what the admin list page reads per
counter), a read every millisecond: what a site sees while a pass runs.

``--foreign N`` adds a scenario (alone with ``--counters '' --series '' --bitmaps ''
--statistics ''``): ``--foreign-counters`` busy counters among N keys of another application,
a whole ``clean_metrics`` pass (every cleaner) timed twice, by this checkout and by
``--foreign-baseline`` (main before the temporary keys' sweep marker, whose every first pass
scanned the whole keyspace for stray temporary keys).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import time
from pathlib import Path
from typing import Any

from common import baseline_tree, configure, run_worker, start, use_tree

#: main before the batched cleaner (issue 13).
CLEANER_BASELINE = "7bbe9c4"
KINDS = ("counter", "events", "bitmap", "statistic")
DAY = 86400
HOUR = 3600
#: Seconds after the writes that a kind is cleaned at: 10 % of the event series then hold only
#: expired events, 10 % of the bitmaps only expired hours.
LATER = {"events": 1200, "bitmap": 12 * HOUR}
#: main before the temporary keys' sweep marker (issue 23): a pass scanned every key.
FOREIGN_BASELINE = "5e4e82d"
#: Keys written per pipelined round trip when filling the database with foreign keys.
FOREIGN_CHUNK = 10_000
#: Commands slower than this (µs) are counted, and the slowest reported (Redis's SLOWLOG).
SLOW_US = 1000


def populate(kind: str, size: int, now: float) -> None:
    """``size`` metrics of ``kind`` under the configured prefix (see the module docstring)."""
    from django_redis_metrics import (
        Batch,
        Counter,
        EventSeries,
        Statistic,
        UniqueBitmap,
        get_redis_connection,
    )

    client = get_redis_connection()
    for index in range(size):
        group = index % 10
        end = now - {8: 600, 9: 200 * DAY}.get(group, 0)  # stopped, retired, busy
        if kind == "counter":
            Counter(f"c{index}").incr_many((end - 15 * step, 1) for step in range(120))
        elif kind == "statistic":
            statistic = Statistic(f"s{index}")
            with Batch(client) as batch:
                for step in range(120):
                    statistic.record(step, when=end - 15 * step, batch=batch)
        elif kind == "events":
            series = EventSeries(f"e{index}", retention=HOUR)
            with Batch(client) as batch:
                for step in range(20):
                    ago = 60 * (step + (40 if group == 9 else 1))
                    series.record(when=now - ago, batch=batch, status=step % 3)
        else:
            bitmap = UniqueBitmap(f"b{index}", periods=("hour", "day", "week", "month"))
            with Batch(client) as batch:
                for user in range(20):
                    when = now - (40 * HOUR if group == 9 else 0) - user * HOUR
                    bitmap.mark(user, when=when, batch=batch)


def clean_once(kind: str) -> dict[str, Any]:
    """One pass of the cleaner of ``kind``, timed, with what it did."""
    from django_redis_metrics import get_redis_connection
    from django_redis_metrics.cleanup import CLEANERS
    from django_redis_metrics.core.connection import is_cluster

    client = get_redis_connection()
    cleaner = CLEANERS[kind]
    now = time.time() + LATER.get(kind, 0)
    single = not is_cluster(client)  # the server's figures: on a single node only
    if single:
        client.config_set("slowlog-log-slower-than", SLOW_US)
        client.config_set("slowlog-max-len", 100_000)
        client.slowlog_reset()
        cpu = redis_cpu(client)
    started = time.perf_counter()
    report = cleaner(now=now, passes=0)
    seconds = time.perf_counter() - started
    used = redis_cpu(client) - cpu if single else 0.0
    slow = [entry["duration"] for entry in client.slowlog_get(100_000)] if single else []
    return {
        "seconds": seconds,
        "redis_us": used * 1e6,
        "slowest_ms": max(slow, default=0) / 1000,
        "slow": len(slow),
        "checked": report.metrics_checked,
        "items": report.items_removed,
        "retired": len(report.metrics_removed),
    }


def redis_cpu(client: Any) -> float:
    """CPU seconds the server's main thread has used (commands, scripts, event loop): not
    ``INFO commandstats``, which counts a script's commands twice (in EVALSHA and their own)."""
    info = client.info("cpu")
    return float(info["used_cpu_user_main_thread"]) + float(info["used_cpu_sys_main_thread"])


def timed_passes(kind: str) -> dict[str, Any]:
    """Two passes (the first does the work, the second is the steady state), while a reader
    thread times ``Counter.recent(60)`` on a counter of its own."""
    from django_redis_metrics import Counter

    probe = Counter("reader probe")
    probe.incr()
    stop = multiprocessing.get_context("fork").Event()
    receive, send = multiprocessing.get_context("fork").Pipe(duplex=False)

    def read() -> None:
        latencies: list[float] = []
        while not stop.is_set():
            started = time.perf_counter()
            probe.recent(60)
            latencies.append(time.perf_counter() - started)
            time.sleep(0.001)
        send.send(latencies)

    reader = multiprocessing.get_context("fork").Process(target=read)
    reader.start()
    try:
        first = clean_once(kind)
        second = clean_once(kind)
    finally:
        stop.set()
        latencies = receive.recv()
        reader.join()
    return {
        "first": first,
        "second": second,
        "read_median_ms": statistics.median(latencies) * 1000 if latencies else 0.0,
        "read_max_ms": max(latencies, default=0.0) * 1000,
    }


def populate_foreign(count: int) -> None:
    """``count`` small keys of another application (another prefix, no hash tag)."""
    from django_redis_metrics import get_redis_connection

    client = get_redis_connection()
    for start_at in range(0, count, FOREIGN_CHUNK):
        pipe = client.pipeline(transaction=False)
        for index in range(start_at, min(start_at + FOREIGN_CHUNK, count)):
            pipe.set(f"other-app:session:{index}", b"x")
        pipe.execute()


def full_passes() -> dict[str, Any]:
    """Two whole ``clean_metrics`` passes (every cleaner, ``passes=0``: the first of a loop),
    timed: the first may do one-time work, the second is what every pass then costs."""
    from django_redis_metrics.cleanup import clean_all

    timed: dict[str, Any] = {}
    for label in ("first", "second"):
        started = time.perf_counter()
        reports = clean_all(passes=0)
        timed[label] = {
            "ms": (time.perf_counter() - started) * 1000,
            "temporary": next(r.summary() for r in reports if r.kind == "temporary"),
        }
    return timed


def foreign_scenario(options: argparse.Namespace, server: Any) -> None:
    """``--foreign-counters`` counters among ``--foreign`` foreign keys, ours against the
    baseline's, on the same server in the same run."""
    tree = None if options.no_baseline else baseline_tree(options.foreign_baseline)
    now = time.time()
    for prefix in ("ours-foreign", "base-foreign"):
        configure(server.url, prefix, CLUSTER=options.cluster)
        populate("counter", options.foreign_counters, now)
    populate_foreign(options.foreign)
    configure(server.url, "ours-foreign", CLUSTER=options.cluster)
    ours = full_passes()
    base = None
    if tree is not None:
        base = run_worker(
            Path(__file__),
            tree,
            f"--url={server.url}",
            "--prefix=base-foreign",
            "--kind=all",
            *(["--cluster"] if options.cluster else []),
        )
    for label in ("first", "second"):
        then = base[label]["ms"] if base else float("nan")
        print(
            f"whole pass, {options.foreign_counters} counters among {options.foreign:,} foreign "
            f"keys, {label:6} pass: now {ours[label]['ms']:8.1f} ms, baseline {then:8.1f} ms, "
            f"ratio {ours[label]['ms'] / then:6.3f}\n{'':15} now: {ours[label]['temporary']}"
            + (f"\n{'':15} baseline: {base[label]['temporary']}" if base else ""),
            flush=True,
        )


def start_cluster() -> Any:
    """A private 3-master Redis Cluster, with Django configured to use it."""
    from django_redis_metrics.testing import RedisClusterServers

    cluster = RedisClusterServers(masters=3).start()
    configure(cluster.url, "bench", CLUSTER=True)
    return cluster


def sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counters", default="100,1000,10000", help="sizes, comma-separated")
    parser.add_argument("--series", default="100,1000", help="event series sizes")
    parser.add_argument("--bitmaps", default="100,1000", help="bitmap sizes")
    parser.add_argument("--statistics", default="100,1000", help="statistic sizes")
    parser.add_argument("--baseline", default=CLEANER_BASELINE, help="git ref of 'today'")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument(
        "--cluster", action="store_true", help="on a private 3-master Redis Cluster instead"
    )
    parser.add_argument(
        "--foreign", type=int, default=0, help="foreign keys of the foreign-keys scenario"
    )
    parser.add_argument("--foreign-counters", type=int, default=100)
    parser.add_argument("--foreign-baseline", default=FOREIGN_BASELINE)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    parser.add_argument("--kind", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:  # a baseline pass: the earlier package, the same server and data
        use_tree(options.worker)
        configure(options.url, options.prefix, CLUSTER=options.cluster)
        if options.kind == "all":
            print(json.dumps(full_passes()))
            return
        print(json.dumps(timed_passes(options.kind)))
        return
    server = start_cluster() if options.cluster else start()
    tree = None
    if not options.no_baseline and any(
        plan_text
        for plan_text in (options.counters, options.series, options.bitmaps, options.statistics)
    ):
        tree = baseline_tree(options.baseline)
    plan = {
        "counter": options.counters,
        "events": options.series,
        "bitmap": options.bitmaps,
        "statistic": options.statistics,
    }
    rows: list[tuple[str, int, dict[str, Any], dict[str, Any] | None]] = []
    try:
        for kind in KINDS:
            for size in sizes(plan[kind]):
                now = time.time()
                for prefix in (f"ours-{kind}-{size}", f"base-{kind}-{size}"):
                    configure(server.url, prefix, CLUSTER=options.cluster)
                    populate(kind, size, now)
                configure(server.url, f"ours-{kind}-{size}", CLUSTER=options.cluster)
                ours = timed_passes(kind)
                base = None
                if tree is not None:
                    base = run_worker(
                        Path(__file__),
                        tree,
                        f"--url={server.url}",
                        f"--prefix=base-{kind}-{size}",
                        f"--kind={kind}",
                        *(["--cluster"] if options.cluster else []),
                    )
                rows.append((kind, size, ours, base))
                report(rows[-1])
        if options.foreign:
            foreign_scenario(options, server)
    finally:
        if options.cluster:
            server.stop()
        else:
            server.cleanup()


def report(row: tuple[str, int, dict[str, Any], dict[str, Any] | None]) -> None:
    kind, size, ours, base = row
    for label in ("first", "second"):
        now = ours[label]["seconds"] * 1000 / size
        then = base[label]["seconds"] * 1000 / size if base else float("nan")
        did = ours[label]
        print(
            f"{kind:8} {size:6,} {label:6} pass: now {now:7.3f} ms/metric, "
            f"{options_label(base)} {then:7.3f} ms/metric, ratio {now / then:6.3f} "
            f"(checked {did['checked']}, removed {did['items']} entries, retired {did['retired']})"
        )
        if not did["redis_us"]:
            continue
        print(
            f"{'':15} Redis CPU per metric: now {did['redis_us'] / size:6.1f} µs, "
            f"slowest command {did['slowest_ms']:5.1f} ms, {did['slow']} over {SLOW_US} µs"
            + (
                f"; baseline {base[label]['redis_us'] / size:6.1f} µs, slowest "
                f"{base[label]['slowest_ms']:5.1f} ms, {base[label]['slow']} over {SLOW_US} µs"
                if base
                else ""
            )
        )
    print(
        f"{'':15} reader Counter.recent(60) during the passes: now median "
        f"{ours['read_median_ms']:.2f} ms max {ours['read_max_ms']:.1f} ms"
        + (
            f"; baseline median {base['read_median_ms']:.2f} ms max {base['read_max_ms']:.1f} ms"
            if base
            else ""
        ),
        flush=True,
    )


def options_label(base: dict[str, Any] | None) -> str:
    return "baseline" if base else "no baseline"


if __name__ == "__main__":
    main()
