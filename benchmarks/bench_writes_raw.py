"""Writes against the raw commands they imply, measured in the same run on the same server:
``EventSeries.record`` against INCR + HSET + 2 ZADD + SADD, ``Statistic.record`` against an
HGET and an HSET per precision (of a slice's text as ours stores it, histogram included) plus
the lifetime HINCRBY, HINCRBYFLOAT and bucket HINCRBY.

    python benchmarks/bench_writes_raw.py [--writes 3000] [--rounds 9]

The raw commands of one write go as one MULTI/EXEC (atomic and one round trip, as ours are),
with the same keys and values: an event is a hash, a time index, an index entry, the value in
its values set; a statistic's value is a summary text per slice and three lifetime fields.

Two figures per write:

- throughput one by one (writes per second, client and server, one round trip each);
- Redis's own time per write (``INFO commandstats``): ours is the EVALSHA's time, which holds
  the time of every command the script calls; raw is the sum of its commands' times (MULTI and
  EXEC themselves left out: they add nothing the script does not also pay).

The machine may be shared: each round runs ours and raw back to back, in alternating order
(ours first in even rounds), on the same server; every round's ratio is printed and the
min / median / max quoted, never a mean of a noisy run. Each round uses new keys of the same
shape, after one warm-up write each.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from common import start

TYPES = ["view", "click", "purchase", "refund", "signup", "login", "logout", "search"]
#: The statistic's default precisions.
PRECISIONS = (60, 300, 3600, 86400)


def server_usec(client: Any, names: tuple[str, ...] | None) -> float:
    """Redis's accumulated µs of the commands ``names`` (None: EVALSHA only)."""
    stats = client.info("commandstats")
    wanted = ("evalsha",) if names is None else names
    return float(sum(stats.get(f"cmdstat_{name}", {}).get("usec", 0) for name in wanted))


def timed(
    client: Any, writes: int, write: Callable[[int], None], names: tuple[str, ...] | None
) -> tuple[float, float]:
    """(writes per second, Redis µs per write) of ``writes`` calls of ``write``."""
    client.config_resetstat()
    started = time.perf_counter()
    for i in range(writes):
        write(i)
    took = time.perf_counter() - started
    return writes / took, server_usec(client, names) / writes


def event_writers(client: Any, tag: str) -> tuple[Callable[[int], None], Callable[[int], None]]:
    from django_redis_metrics import EventSeries

    series = EventSeries(f"ours {tag}", index=["type"])
    base = time.time() - 3600
    raw = f"raw:{{{tag}}}"

    def ours(i: int) -> None:
        series.record(base + i * 0.001, type=TYPES[i % 8], user=i)

    def plain(i: int) -> None:
        kind, when = TYPES[i % 8], base + i * 0.001
        pipe = client.pipeline(transaction=True)
        pipe.incr(f"{raw}:seq")
        pipe.hset(f"{raw}:e:{i}", mapping={"type": kind, "user": i})
        pipe.zadd(f"{raw}:time", {i: when})
        pipe.zadd(f"{raw}:by:type:{kind}", {i: when})
        pipe.sadd(f"{raw}:values:type", kind)
        pipe.execute()

    ours(-1)
    plain(-1)
    return ours, plain


def statistic_writers(client: Any, tag: str) -> tuple[Callable[[int], None], Callable[[int], None]]:
    from django_redis_metrics import Statistic
    from django_redis_metrics.statistic import histogram

    metric = Statistic(f"ours {tag}", precisions=PRECISIONS)
    rng = random.Random(7)
    values = [rng.lognormvariate(3, 1) for _ in range(1000)]
    raw = f"raw:{{{tag}}}"

    def ours(i: int) -> None:
        metric.record(values[i % 1000])

    for i in range(1000):  # slices holding the histogram of many values, as in production
        ours(i)
    text = max(client.hvals(metric.key(PRECISIONS[0])), key=len)  # a slice's text as stored

    def plain(i: int) -> None:
        value = values[i % 1000]
        now = time.time()
        bucket = histogram.bucket(value)
        pipe = client.pipeline(transaction=True)
        for p in PRECISIONS:
            start = int(now // p * p)
            pipe.hget(f"{raw}:{p}", start)
            pipe.hset(f"{raw}:{p}", start, text)
        pipe.hincrby(f"{raw}:meta", "n", 1)
        pipe.hincrbyfloat(f"{raw}:meta", "s", value)
        pipe.hincrby(f"{raw}:meta", f"b{bucket}", 1)
        pipe.execute()

    ours(-1)
    plain(-1)
    return ours, plain


EVENT_RAW = ("incr", "hset", "zadd", "sadd")
STATISTIC_RAW = ("hget", "hset", "hincrby", "hincrbyfloat")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=3000, help="writes timed per round")
    parser.add_argument("--rounds", type=int, default=9)
    options = parser.parse_args()
    server = start()
    try:
        from django_redis_metrics import get_redis_connection

        client = get_redis_connection()
        print(
            f"redis-server {client.info('server')['redis_version']}; {options.rounds} rounds "
            f"of {options.writes:,} writes, ours and raw alternating"
        )
        for label, writers, raw_names in (
            ("EventSeries.record", event_writers, EVENT_RAW),
            ("Statistic.record", statistic_writers, STATISTIC_RAW),
        ):
            rows = []
            for round_ in range(options.rounds):
                ours, plain = writers(client, f"{label} {round_}")
                order = [(ours, None), (plain, raw_names)]
                if round_ % 2:
                    order.reverse()
                found = {id(w): timed(client, options.writes, w, n) for w, n in order}
                rows.append((found[id(ours)], found[id(plain)]))
            report(label, rows)
    finally:
        server.cleanup()


def report(label: str, rows: list[tuple[tuple[float, float], tuple[float, float]]]) -> None:
    print(f"\n{label}: ours / raw, each round")
    heads = ("round", "ours/s", "raw/s", "rate", "ours µs", "raw µs", "time")
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, (5, 8, 8, 6, 8, 7, 6), strict=True)))
    rates, times = [], []
    for i, ((o_rate, o_us), (r_rate, r_us)) in enumerate(rows):
        rates.append(o_rate / r_rate)
        times.append(o_us / r_us)
        print(
            f"{i:>5} {o_rate:8,.0f} {r_rate:8,.0f} {rates[-1]:6.2f} {o_us:8.2f} {r_us:7.2f} "
            f"{times[-1]:6.2f}"
        )
    for name, ratios in (("throughput ours/raw", rates), ("Redis time ours/raw", times)):
        print(
            f"{name}: min {min(ratios):.2f} median {statistics.median(ratios):.2f} "
            f"max {max(ratios):.2f}"
        )


if __name__ == "__main__":
    main()
