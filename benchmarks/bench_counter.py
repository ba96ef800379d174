"""Counter writes: throughput against redis-benchmark's pipelined HINCRBY on the same server, and
the Redis time per ``incr`` against the same writes made by an earlier version of the package.

    python benchmarks/bench_counter.py [--increments 200000] [--rounds 5]
        [--baseline REF | --no-baseline] [--no-throughput]

Each increment updates one slice per precision (7 HINCRBY by default). The throughput ratio
compares the slice updates per second each write path achieves with the HINCRBY commands per
second that redis-benchmark reaches (50 clients, pipelines of 100) on the same server in the
same run.

The Redis time per ``incr`` is the server's own time per script call (``INFO commandstats``,
``EVALSHA``), measured for three write patterns with this checkout and with the package at
``REF`` (default: main just before write-time retention), run in a subprocess against the same
server, in alternating rounds; the medians are compared. Goal (issue 10): within 10 % of today.
``--no-throughput`` measures only that.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from common import (
    BASELINE_REF,
    baseline_tree,
    best_of,
    configure,
    redis_benchmark_rate,
    run_worker,
    start,
    use_tree,
)

#: The write patterns whose Redis time per incr is compared with today's. Each counter first
#: gets two hours of history, one increment a second, so that its hashes are as a long-running
#: counter's: full (120 slices, compact) now, and large (every slice ever written) today.
PATTERNS = {
    "busy": "incr() one by one, now (many increments per 1 s slice)",
    "batched": "Batch of 200 incr(), now",
    "sparse": "incr() one by one, each in a new 1 s slice (one a second)",
}
HISTORY = 7200


def redis_time(options: argparse.Namespace, tag: str) -> dict[str, float]:
    """Server microseconds per incr script call, per write pattern (fresh counters)."""
    from django_redis_metrics import Batch, Counter, get_redis_connection

    client = get_redis_connection()
    warm = Counter(f"{tag} warm-up")
    warm.incr()  # loads the script: no EVAL below, only EVALSHA
    result = {}
    now = time.time()
    for pattern in PATTERNS:
        counter = Counter(f"{tag} {pattern}")
        history = now - options.single - HISTORY if pattern == "sparse" else now - HISTORY
        counter.incr_many([(history + second, 1) for second in range(HISTORY)])
        client.config_resetstat()
        if pattern == "busy":
            for _ in range(options.single):
                counter.incr()
        elif pattern == "batched":
            for _ in range(options.single // 200):
                with Batch(client) as batch:
                    for _ in range(200):
                        counter.incr(batch=batch)
        else:
            first = now - options.single
            for second in range(options.single):
                counter.incr(when=first + second)
        result[pattern] = float(client.info("commandstats")["cmdstat_evalsha"]["usec_per_call"])
    return result


def throughput(server: Any, options: argparse.Namespace) -> None:
    from django_redis_metrics import Batch, Counter, get_redis_connection

    client = get_redis_connection()
    precisions = len(Counter("probe").precisions)
    baseline = redis_benchmark_rate(server, "HINCRBY", "bench:hash", "__rand_int__", "1")
    now = time.time()
    rng = random.Random(1)

    counter = Counter("one by one")
    counter.incr()
    single = best_of(1, lambda: [counter.incr() for _ in range(options.single)])

    counters = [Counter(f"batched {i}") for i in range(50)]

    def batched() -> None:
        for _ in range(options.increments // options.batch_size):
            with Batch(client) as batch:
                for index in range(options.batch_size):
                    counters[index % 50].incr(when=now, batch=batch)

    batch_seconds = best_of(1, batched)
    batch_increments = options.increments // options.batch_size * options.batch_size

    spread = [(now - rng.uniform(0, 3600), 1) for _ in range(options.increments)]
    bulk = Counter("bulk import")
    bulk_seconds = best_of(3, lambda: bulk.incr_many(spread))
    assert bulk.total(86400) >= options.increments

    distinct = [(now - i, 1) for i in range(options.increments)]  # one second each: no summing
    sparse = Counter("sparse import")
    sparse_seconds = best_of(1, lambda: sparse.incr_many(distinct))

    rows = [
        ("incr() one by one", options.single / single),
        (f"Batch of {options.batch_size} incr()", batch_increments / batch_seconds),
        ("incr_many() over the last hour", options.increments / bulk_seconds),
        ("incr_many(), each in its own second", options.increments / sparse_seconds),
    ]
    print(f"redis-benchmark HINCRBY, 50 clients, -P 100: {baseline:,.0f} commands/s")
    print(f"{'write path':36} {'increments/s':>14} {'slice updates/s':>16} {'ratio':>7}")
    for label, rate in rows:
        updates = rate * precisions
        print(f"{label:36} {rate:14,.0f} {updates:16,.0f} {updates / baseline:7.2f}")


def compare(server: Any, options: argparse.Namespace) -> None:
    """Redis time per incr, this checkout against ``options.baseline``, alternating rounds."""
    ours: dict[str, list[float]] = {p: [] for p in PATTERNS}
    today: dict[str, list[float]] = {p: [] for p in PATTERNS}
    tree = None if options.no_baseline else baseline_tree(options.baseline)
    for round_ in range(options.rounds):
        configure(server.url, "now")
        for pattern, value in redis_time(options, f"round {round_}").items():
            ours[pattern].append(value)
        if tree is not None:
            found = run_worker(
                Path(__file__),
                tree,
                "--url",
                server.url,
                f"--single={options.single}",
                f"--tag=round {round_}",
            )
            for pattern, value in found.items():
                today[pattern].append(value)
    print(
        f"\nRedis time per incr (EVALSHA µs, median of {options.rounds} alternating rounds of "
        f"{options.single:,} increments), against {options.baseline}:"
    )
    print(f"{'write pattern (after 2 h of history)':62} {'now':>7} {'today':>7} {'ratio':>6}")
    for pattern, label in PATTERNS.items():
        now = statistics.median(ours[pattern])
        then = statistics.median(today[pattern]) if today[pattern] else float("nan")
        print(f"{label:62} {now:7.2f} {then:7.2f} {now / then:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--increments", type=int, default=200_000)
    parser.add_argument("--single", type=int, default=20_000, help="one-by-one increments")
    parser.add_argument("--batch-size", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", default=BASELINE_REF, help="git ref of 'today'")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--no-throughput", action="store_true", help="Redis time per incr only")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--tag", default="", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:  # a baseline round: the earlier package, the same server
        use_tree(options.worker)
        configure(options.url, "today")
        print(json.dumps(redis_time(options, options.tag)))
        return
    server = start()
    try:
        if not options.no_throughput:
            throughput(server, options)
        compare(server, options)
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
