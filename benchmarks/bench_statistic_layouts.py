"""What a statistic record would cost Redis with its slice out of Lua: the commands of a layout
of one field per number (count, sum, sum of squares, the value's bucket by ``HINCRBY`` and
``HINCRBYFLOAT``; min and max in sorted sets by ``ZADD LT``/``GT``), against the raw commands
``bench_writes_raw.py`` compares ``Statistic.record`` with (an ``HGET`` and an ``HSET`` of each
precision's slice text, the lifetime ``HINCRBY``, ``HINCRBYFLOAT`` and bucket ``HINCRBY``);
and the same fields with the sums kept as integers of a fixed scale (``fixed``).

    python benchmarks/bench_statistic_layouts.py [--records 2000] [--rounds 5]

Both go as one ``MULTI``/``EXEC`` per record, ten records a second of lognormal values over the
statistic's default precisions (1 min, 5 min, 1 h, 1 day), on a private Redis, in alternating
rounds; the figure is ``EXEC``'s time per record (``INFO commandstats``: it holds its
commands'), with each command's own time per call, and the ratio of the medians. No package
code runs: this prices a layout before anyone builds it.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from common import start

PRECISIONS = (60, 300, 3600, 86400)
#: A slice's text as the record script keeps it: six numbers and a histogram of 60 buckets.
TEXT = "12 3456.78 1.5 98.2 1234.5 " + " ".join(f"{i}:{(i * 7) % 50 + 1}" for i in range(60))


def raw(pipe: Any, t: int, value: float) -> None:
    for p in PRECISIONS:
        pipe.hget(f"raw:{p}", t // p * p)
    for p in PRECISIONS:
        pipe.hset(f"raw:{p}", t // p * p, TEXT)
    pipe.hincrby("raw:meta", "n", 1)
    pipe.hincrbyfloat("raw:meta", "s", value)
    pipe.hincrby("raw:meta", "b:12", 1)


def per_number(prefix: str, integer_sums: bool) -> Callable[[Any, int, float], None]:
    """The layout of one field per number under ``prefix``; ``integer_sums``: the sums kept as
    integers (thousandths, the squares rounded), an ``HINCRBY`` where ``HINCRBYFLOAT`` formats a
    long double, at the price of a fixed scale."""

    def write(pipe: Any, t: int, value: float) -> None:
        bucket = int(value).bit_length()
        add = pipe.hincrby if integer_sums else pipe.hincrbyfloat
        total = round(value * 1000) if integer_sums else value
        square = round(value * value) if integer_sums else value * value
        for p in PRECISIONS:
            start_, key = t // p * p, f"{prefix}:{p}"
            pipe.hincrby(key, f"{start_}:n", 1)
            add(key, f"{start_}:s", total)
            add(key, f"{start_}:q", square)
            pipe.hincrby(key, f"{start_}:b{bucket}", 1)
            pipe.zadd(f"{key}:min", {str(start_): value}, lt=True)
            pipe.zadd(f"{key}:max", {str(start_): value}, gt=True)
        pipe.hincrby(f"{prefix}:meta", "n", 1)
        add(f"{prefix}:meta", "s", total)
        pipe.hincrby(f"{prefix}:meta", f"b:{bucket}", 1)

    return write


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    server = start()
    client = server.client()
    layouts: dict[str, Callable[[Any, int, float], None]] = {
        "raw": raw,
        "fields": per_number("fields", False),
        "fixed": per_number("fixed", True),
    }
    per_record: dict[str, list[float]] = {name: [] for name in layouts}
    per_call: dict[str, dict[str, float]] = {}
    rng, first = random.Random(7), int(time.time())
    try:
        for _ in range(args.rounds):
            for name, layout in layouts.items():
                client.config_resetstat()
                for i in range(args.records):
                    pipe = client.pipeline(transaction=True)
                    layout(pipe, first + i // 10, rng.lognormvariate(3, 1))
                    pipe.execute()
                stats = client.info("commandstats")
                per_record[name].append(stats["cmdstat_exec"]["usec"] / args.records)
                per_call[name] = {
                    key.removeprefix("cmdstat_"): value["usec_per_call"]
                    for key, value in stats.items()
                    if key not in ("cmdstat_exec", "cmdstat_multi", "cmdstat_config|resetstat")
                }
        version = client.info("server")["redis_version"]
        print(f"\n{args.rounds} rounds of {args.records} records, Redis {version}\n")
        print("| layout | Redis µs per record, rounds | median | µs per call |\n|---|---|---:|---|")
        for name, values in per_record.items():
            calls = ", ".join(f"{k} {v:.2f}" for k, v in sorted(per_call[name].items()))
            rounds = " / ".join(f"{v:.2f}" for v in values)
            print(f"| {name} | {rounds} | {statistics.median(values):.2f} | {calls} |")
        base = statistics.median(per_record["raw"])
        for name in ("fields", "fixed"):
            print(f"\n{name} / raw: {statistics.median(per_record[name]) / base:.2f}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
