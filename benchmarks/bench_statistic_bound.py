"""Statistic.record_many's worst script call: values cut into calls of at most
``MAX_BUCKETS_PER_CALL`` histogram buckets and ``MAX_VALUES_PER_CALL`` values, against the same
values sent unsplit in one call, measured in the same run on the same server.

    python benchmarks/bench_statistic_bound.py [--rounds 5] [--buckets N] [--values N]

Each call's Redis time comes from SLOWLOG (``slowlog-log-slower-than 0``). Every input is
recorded ``--rounds`` times, each time into a fresh statistic whose slices already hold
``MAX_BUCKETS`` buckets (the costliest state: any new bucket merges two). The worst call is
given twice: the slowest call seen, and the slowest call position taking each position's
fastest round (a busy machine preempts redis-server mid-call; that figure leaves it out).
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections.abc import Callable
from typing import Any

from common import start

#: Buckets 1.1**k (k from -630 to 369) cover: 1,000 values, each in a bucket of its own.
ADVERSARIAL = [1.1**k for k in range(-630, 370)]


def inputs() -> dict[str, list[float]]:
    """The adversarial inputs, by name."""
    rng = random.Random(24)
    spread = [10 ** rng.uniform(-1, 3.7) for _ in range(500)]  # 0.1 ms to 5 s
    drain = [rng.lognormvariate(3, 1.5) for _ in range(4000)]  # a view's 4 s backlog
    return {
        "1.1**k, k in [-630, 370)": ADVERSARIAL,
        "500 latencies, 0.1-5000 ms": spread,
        "descending (new lowest)": sorted(ADVERSARIAL[:700], reverse=True),
        "4,000 lognormal latencies": drain,
    }


def call_times(client: Any, write: Callable[[], object]) -> list[int]:
    """Microseconds of each EVALSHA that ``write`` makes, in order (SLOWLOG)."""
    client.slowlog_reset()
    write()
    entries = client.slowlog_get(1_000_000)
    found = [e for e in entries if str(e["command"]).lstrip("b'").startswith("EVALSHA")]
    return [int(e["duration"]) for e in reversed(found)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--buckets", type=int, help="MAX_BUCKETS_PER_CALL to try")
    parser.add_argument("--values", type=int, help="MAX_VALUES_PER_CALL to try")
    options = parser.parse_args()
    server = start()
    try:
        from django_redis_metrics import Statistic, get_redis_connection

        class Unsplit(Statistic):
            """The same statistic sending every value in one call."""

            MAX_VALUES_PER_CALL = 10**9
            MAX_BUCKETS_PER_CALL = 10**9

        if options.buckets:
            Statistic.MAX_BUCKETS_PER_CALL = options.buckets
        if options.values:
            Statistic.MAX_VALUES_PER_CALL = options.values
        client = get_redis_connection()
        client.config_set("slowlog-log-slower-than", 0)
        client.config_set("slowlog-max-len", 1_000_000)
        history = ADVERSARIAL[::7]  # fills every slice to MAX_BUCKETS buckets
        Statistic("warm").record(1)
        print(
            f"Worst Redis time of one record_many script call (µs; {options.rounds} rounds, "
            f"slices full; MAX_BUCKETS_PER_CALL={Statistic.MAX_BUCKETS_PER_CALL}, "
            f"MAX_VALUES_PER_CALL={Statistic.MAX_VALUES_PER_CALL}):"
        )
        print(f"{'input':28} {'calls':>5} {'worst':>7} {'steady':>7} {'unsplit':>9} {'ratio':>6}")
        for label, values in inputs().items():
            split: list[list[int]] = []
            whole: list[int] = []
            for round_ in range(options.rounds):
                for kind, found in ((Statistic, split), (Unsplit, whole)):
                    metric = kind(f"{label} {kind.__name__} {round_}")
                    Statistic(metric.name).record_many(history)
                    times = call_times(client, lambda m=metric, v=values: m.record_many(v))
                    if kind is Statistic:
                        found.append(times)
                    else:
                        whole.extend(times)
            worst = max(max(times) for times in split)
            steady = max(min(column) for column in zip(*split, strict=True))
            unsplit = statistics.median(whole)
            print(
                f"{label:28} {len(split[0]):5} {worst:7} {steady:7} {unsplit:9.0f} "
                f"{unsplit / steady:6.0f}"
            )
        single = call_times(client, lambda: [Statistic("one").record(v) for v in ADVERSARIAL])
        print(f"{'record(), one value':28} {len(single):5} {max(single):7}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
