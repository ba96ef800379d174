"""Statistic.record_many's worst script call: values cut into calls of at most
``MAX_BUCKETS_PER_CALL`` histogram buckets and ``MAX_VALUES_PER_CALL`` values, against the same
values sent unsplit in one call, and against ``record_many`` of an earlier version (``main``
by default), all measured in the same run on the same server.

    python benchmarks/bench_statistic_bound.py [--rounds 5] [--buckets N] [--values N]
        [--baseline REF | --no-baseline]

Each call's Redis time comes from SLOWLOG (``slowlog-log-slower-than 0``). Every input is
recorded ``--rounds`` times, each time into a fresh statistic whose slices already hold
``MAX_BUCKETS`` buckets (the costliest state: any new bucket merges two). The worst call is
given twice: the slowest call seen, and the slowest call position taking each position's
fastest round (a busy machine preempts redis-server mid-call; that figure leaves it out). The
unsplit call and the earlier version's worst call are medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import baseline_tree, configure, run_worker, start, use_tree

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


def worst_calls(statistic: type, label: str, values: list[float], rounds: int) -> list[list[int]]:
    """The call times of ``statistic(...).record_many(values)``, one list per round, each
    into a fresh statistic whose slices are full."""
    from django_redis_metrics import get_redis_connection

    client = get_redis_connection()
    found = []
    for round_ in range(rounds):
        metric = statistic(f"{label} {statistic.__name__} {round_}")
        metric.record_many(ADVERSARIAL[::7])  # fills every slice to MAX_BUCKETS buckets
        found.append(call_times(client, lambda m=metric: m.record_many(values)))
    return found


def setup_slowlog() -> None:
    from django_redis_metrics import Statistic, get_redis_connection

    client = get_redis_connection()
    client.config_set("slowlog-log-slower-than", 0)
    client.config_set("slowlog-max-len", 1_000_000)
    Statistic("warm").record(1)


def baseline_worst(rounds: int) -> dict[str, float]:
    """In a worker: the worst call of the earlier version's ``record_many``, per input."""
    from django_redis_metrics import Statistic

    setup_slowlog()
    return {
        label: statistics.median(max(times) for times in worst_calls(Statistic, label, v, rounds))
        for label, v in inputs().items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--buckets", type=int, help="MAX_BUCKETS_PER_CALL to try")
    parser.add_argument("--values", type=int, help="MAX_VALUES_PER_CALL to try")
    parser.add_argument("--baseline", default="main", help="git ref of the earlier version")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:  # the earlier package, the same server
        use_tree(options.worker)
        configure(options.url, "baseline")
        print(json.dumps(baseline_worst(options.rounds)))
        return
    server = start()
    try:
        from django_redis_metrics import Statistic

        class Unsplit(Statistic):
            """The same statistic sending every value in one call."""

            MAX_VALUES_PER_CALL = 10**9
            MAX_BUCKETS_PER_CALL = 10**9

        if options.buckets:
            Statistic.MAX_BUCKETS_PER_CALL = options.buckets
        if options.values:
            Statistic.MAX_VALUES_PER_CALL = options.values
        setup_slowlog()
        before: dict[str, float] = {}
        if not options.no_baseline:
            tree = baseline_tree(options.baseline)
            before = run_worker(
                Path(__file__), tree, "--url", server.url, f"--rounds={options.rounds}"
            )
        print(
            f"Worst Redis time of one record_many script call (µs; {options.rounds} rounds, "
            f"slices full; MAX_BUCKETS_PER_CALL={Statistic.MAX_BUCKETS_PER_CALL}, "
            f"MAX_VALUES_PER_CALL={Statistic.MAX_VALUES_PER_CALL}; "
            f"{options.baseline}: its own record_many):"
        )
        print(
            f"{'input':28} {'calls':>5} {'worst':>7} {'steady':>7} {'unsplit':>9} "
            f"{'ratio':>6} {options.baseline:>9} {'ratio':>6}"
        )
        for label, values in inputs().items():
            split = worst_calls(Statistic, label, values, options.rounds)
            whole = [
                t for times in worst_calls(Unsplit, label, values, options.rounds) for t in times
            ]
            worst = max(max(times) for times in split)
            steady = max(min(column) for column in zip(*split, strict=True))
            unsplit = statistics.median(whole)
            then = before.get(label, float("nan"))
            print(
                f"{label:28} {len(split[0]):5} {worst:7} {steady:7} {unsplit:9.0f} "
                f"{unsplit / steady:6.0f} {then:9.0f} {then / steady:6.0f}"
            )
        from django_redis_metrics import get_redis_connection

        single = call_times(
            get_redis_connection(), lambda: [Statistic("one").record(v) for v in ADVERSARIAL]
        )
        print(f"{'record(), one value':28} {len(single):5} {max(single):7}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
