"""The client's own work per counter write, against redis-py's for one command (issue 23).

    python benchmarks/bench_counter_client.py [--rounds 5] [--baseline f1683cf]

A counter's write is bound by its client on a busy machine: this measures the CPU time of the
calling process (``time.process_time``: Python, packing, parsing, system calls; not the wait
for Redis, whose own time ``bench_rts.py`` reports) per operation, on a private redis-server:

- ``incr()`` one by one, steady (the transaction fast path), against one ``HINCRBY`` through
  redis-py's ``execute_command``, the same path as a ``TS.INCRBY``;
- ``incr(batch=...)``, one increment a second in ``Batch``es of 1,000, against 1,000
  ``HINCRBY`` in a redis-py pipeline.

Each round runs this checkout, the package at ``--baseline`` (a subprocess on the same server)
and redis-py, one after another; the table gives the medians and the ratio of CPU per
operation to redis-py's from the same round (min / median / max over the rounds).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

#: main before the counter's write plan (counter/plan.py).
BASELINE_REF = "f1683cf"
DAY = 86400


def cpu_per_op(count: int, action: Any) -> float:
    """CPU µs of this process per operation of ``action``."""
    started = time.process_time()
    action()
    return (time.process_time() - started) / count * 1e6


def ours_round(tag: str, options: dict[str, int]) -> dict[str, float]:
    """Client CPU per write of the package importable here."""
    from django_redis_metrics import Batch, Counter

    ones, batched = options["ones"], options["batched"]
    hot = Counter(f"{tag}:hot")
    hot.incr()  # the script opens the slices: steady increments follow
    day, first = Counter(f"{tag}:day"), (int(time.time()) // DAY - 1) * DAY

    def a_second_each() -> None:
        for chunk in range(first, first + batched, 1000):
            with Batch() as batch:
                for second in range(chunk, chunk + 1000):
                    day.incr(1, second, batch=batch)

    return {
        "incr": cpu_per_op(ones, lambda: [hot.incr() for _ in range(ones)]),
        "batched": cpu_per_op(batched, a_second_each),
    }


def redis_py_round(url: str, tag: str, options: dict[str, int]) -> dict[str, float]:
    """The same counts of commands through redis-py alone."""
    import redis

    client = redis.Redis.from_url(url)
    ones, batched = options["ones"], options["batched"]
    client.execute_command("HINCRBY", tag, "f", 1)

    def pipelined() -> None:
        for chunk in range(0, batched, 1000):
            pipe = client.pipeline(transaction=False)
            for second in range(chunk, chunk + 1000):
                pipe.execute_command("HINCRBY", f"{tag}:p", second, 1)
            pipe.execute()

    return {
        "incr": cpu_per_op(
            ones, lambda: [client.execute_command("HINCRBY", tag, "f", 1) for _ in range(ones)]
        ),
        "batched": cpu_per_op(batched, pipelined),
    }


def worker(tree: str, url: str, tag: str, options: str) -> None:
    """In a subprocess: one round of the baseline package (loaded from ``tree``)."""
    from common import configure, use_tree

    use_tree(tree)
    configure(url, "base")
    print(json.dumps(ours_round(tag, json.loads(options))))


FIGURES = (
    ("incr()", "incr", "one HINCRBY"),
    ("incr(batch=...), one a second, Batch of 1000", "batched", "pipelined HINCRBY"),
)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:6])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--ones", type=int, default=5000, help="incr() calls per round")
    parser.add_argument("--batched", type=int, default=20000, help="batched incr() per round")
    parser.add_argument("--baseline", default=BASELINE_REF, help="git ref of the baseline")
    args = parser.parse_args()
    from common import baseline_tree, configure, run_worker

    from django_redis_metrics.testing import RedisServer

    server = RedisServer().start()
    options = {"ones": args.ones, "batched": args.batched}
    try:
        configure(server.url, "ours")
        tree = baseline_tree(args.baseline)
        rounds: list[tuple[dict[str, float], dict[str, float], dict[str, float]]] = []
        for index in range(args.rounds):
            ours = ours_round(f"r{index}", options)
            base = run_worker(Path(__file__), tree, server.url, f"b{index}", json.dumps(options))
            plain = redis_py_round(server.url, f"p{index}", options)
            rounds.append((ours, base, plain))
            server.client().flushdb()
        print(f"\n{args.rounds} rounds; client CPU µs per operation, medians\n")
        print(
            "| write | ours | baseline | redis-py | ours / redis-py min / median / max "
            "| baseline / redis-py |\n|---|---:|---:|---:|---|---|"
        )
        for label, key, command in FIGURES:
            mine = sorted(o[key] / p[key] for o, _, p in rounds)
            theirs = sorted(b[key] / p[key] for _, b, p in rounds)
            print(
                f"| {label} vs {command} | {statistics.median(o[key] for o, _, _ in rounds):.1f} "
                f"| {statistics.median(b[key] for _, b, _ in rounds):.1f} "
                f"| {statistics.median(p[key] for _, _, p in rounds):.1f} "
                f"| {min(mine):.2f} / {statistics.median(mine):.2f} / {max(mine):.2f} "
                f"| {min(theirs):.2f} / {statistics.median(theirs):.2f} / {max(theirs):.2f} |"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
