"""Statistic and Gauge writes: the Redis time per ``record`` and per ``set`` against the Redis
time per ``Counter.incr`` over the same precisions, measured in the same run on the same server.

    python benchmarks/bench_statistic.py [--writes 20000] [--rounds 5]

The Redis time is the server's own time per script call (``INFO commandstats``, ``EVALSHA``).
Each metric first gets two hours of history (lognormal latencies, one a second), so that its
hashes are full; then ``--writes`` writes are made one by one, now (many per slice, with the
values spread over the histogram as latencies are). Rounds alternate the three kinds; medians
are compared. The memory of the statistic after its history is printed as well.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from common import start

#: The precisions every kind is measured with: the Statistic's defaults.
PRECISIONS = (60, 300, 3600, 86400)
HISTORY = 7200


def redis_time(kind: str, writes: int, tag: str) -> tuple[float, int]:
    """Server microseconds per write script call of ``kind``, and the metric's bytes."""
    from django_redis_metrics import Batch, Counter, Gauge, Statistic, get_redis_connection

    client = get_redis_connection()
    rng = random.Random(7)
    metric = {"counter": Counter, "statistic": Statistic, "gauge": Gauge}[kind](
        f"{tag} {kind}", precisions=PRECISIONS, samples=120
    )

    def write(value: float, when: float | None = None, batch: Batch | None = None) -> None:
        if isinstance(metric, Counter):
            metric.incr(1, when, batch=batch)
        elif isinstance(metric, Statistic):
            metric.record(value, when, batch=batch)
        else:
            metric.set(value, when, batch=batch)

    now = time.time()
    with Batch(client) as batch:
        for second in range(HISTORY):
            write(rng.lognormvariate(3, 1), now - HISTORY + second, batch)
    size = sum(
        int(client.memory_usage(key, samples=0) or 0)
        for key in [metric.meta_key, *(metric.key(p) for p in PRECISIONS)]
    )
    values = [rng.lognormvariate(3, 1) for _ in range(writes)]
    client.config_resetstat()
    for value in values:
        write(value)
    return float(client.info("commandstats")["cmdstat_evalsha"]["usec_per_call"]), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    server = start()
    kinds = ("counter", "statistic", "gauge")
    found: dict[str, list[float]] = {kind: [] for kind in kinds}
    sizes: dict[str, int] = {}
    try:
        for round_ in range(options.rounds):
            for kind in kinds:
                usec, size = redis_time(kind, options.writes, f"round {round_}")
                found[kind].append(usec)
                sizes[kind] = size
    finally:
        server.cleanup()
    counter = statistics.median(found["counter"])
    print(
        f"Redis time per write (EVALSHA µs, median of {options.rounds} alternating rounds of "
        f"{options.writes:,} writes, precisions {PRECISIONS}, after 2 h of history):"
    )
    print(f"{'write':28} {'µs':>7} {'vs incr':>8} {'bytes after history':>20}")
    for kind, label in (
        ("counter", "Counter.incr()"),
        ("statistic", "Statistic.record()"),
        ("gauge", "Gauge.set()"),
    ):
        usec = statistics.median(found[kind])
        print(f"{label:28} {usec:7.2f} {usec / counter:8.2f} {sizes[kind]:20,}")


if __name__ == "__main__":
    main()
