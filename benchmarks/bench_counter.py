"""Counter write throughput against redis-benchmark's pipelined HINCRBY on the same server.

    python benchmarks/bench_counter.py [--increments 200000]

Each increment updates one slice per precision (7 HINCRBY by default). The ratio compares the
slice updates per second each write path achieves with the HINCRBY commands per second that
redis-benchmark reaches (50 clients, pipelines of 100) on the same server in the same run.
"""

from __future__ import annotations

import argparse
import random
import time

from common import best_of, redis_benchmark_rate, start

from django_redis_metrics import Batch, Counter, get_redis_connection


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--increments", type=int, default=200_000)
    parser.add_argument("--single", type=int, default=20_000, help="one-by-one increments")
    parser.add_argument("--batch-size", type=int, default=200)
    options = parser.parse_args()
    server = start()
    try:
        run(server, options)
    finally:
        server.cleanup()


def run(server, options) -> None:
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
    stats = client.info("commandstats")["cmdstat_evalsha"]
    print(f"server time per script call: {stats['usec_per_call']:.1f} µs")
    print(f"redis-benchmark HINCRBY, 50 clients, -P 100: {baseline:,.0f} commands/s")
    print(f"{'write path':34} {'increments/s':>14} {'slice updates/s':>16} {'ratio':>7}")
    for label, rate in rows:
        updates = rate * precisions
        print(f"{label:34} {rate:14,.0f} {updates:16,.0f} {updates / baseline:7.2f}")


if __name__ == "__main__":
    main()
