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
  the time of every command the script calls (for an event, plus the commands of its
  transaction, see ``OURS_TRANSACTION``); raw is the sum of its commands' times (MULTI and EXEC
  themselves left out, on both sides).

An event series is measured three ways: ours, ours through the record script alone (as the
previous release sent every event: ``EventSeries.TRANSACTIONS = False``) and raw.

The machine may be shared: within each round ours and raw take turns by blocks of ``--block``
writes (200), in the reverse order every other block, so a disturbance of a second or so falls
on both; every round's ratio is printed and the min / median / max quoted, never a mean of a
noisy run, with the ratio of each side's fastest block (disturbances only slow a block down,
so the fastest is the nearest to what a write costs). Each round uses new keys of the same
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
    client: Any, first: int, writes: int, write: Callable[[int], None], names: Any
) -> tuple[float, float]:
    """(seconds, Redis µs) of ``writes`` calls of ``write``, numbered from ``first``."""
    client.config_resetstat()
    started = time.perf_counter()
    for i in range(first, first + writes):
        write(i)
    took = time.perf_counter() - started
    return took, server_usec(client, names)


def measure_round(
    client: Any, pair: list[tuple[Callable[[int], None], Any]], writes: int, block: int
) -> list[tuple[float, float, float]]:
    """Per side of ``pair``: (writes per second, Redis µs per write, writes per second of its
    fastest block). The sides take turns by blocks of ``block`` writes, in the reverse order
    every other block, so that a disturbance of a second or so falls on both."""
    totals = [[0.0, 0.0, float("inf")] for _ in pair]
    for index, first in enumerate(range(0, writes, block)):
        n = min(block, writes - first)
        sides = list(enumerate(pair)) if index % 2 == 0 else list(enumerate(pair))[::-1]
        for side, (write, names) in sides:
            took, usec = timed(client, first, n, write, names)
            totals[side][0] += took
            totals[side][1] += usec
            totals[side][2] = min(totals[side][2], took / n)
    return [(writes / took, usec / writes, 1 / best) for took, usec, best in totals]


def event_writers(client: Any, tag: str) -> tuple[Callable[[int], None], ...]:
    """Ours (a transaction while the process holds ids, ``events/fast.py``), ours through the
    record script alone (``TRANSACTIONS = False``: every event as the previous release sent it),
    and the raw commands."""
    from django_redis_metrics import EventSeries

    series = EventSeries(f"ours {tag}", index=["type"])
    scripted = EventSeries(f"script {tag}", index=["type"])
    scripted.TRANSACTIONS = False  # type: ignore[misc]  # this instance only
    base = time.time() - 3600
    raw = f"raw:{{{tag}}}"

    def ours(i: int) -> None:
        series.record(base + i * 0.001, type=TYPES[i % 8], user=i)

    def script(i: int) -> None:
        scripted.record(base + i * 0.001, type=TYPES[i % 8], user=i)

    def plain(i: int) -> None:
        kind, when = TYPES[i % 8], base + i * 0.001
        pipe = client.pipeline(transaction=True)
        pipe.incr(f"{raw}:seq")
        pipe.hset(f"{raw}:e:{i}", mapping={"type": kind, "user": i})
        pipe.zadd(f"{raw}:time", {i: when})
        pipe.zadd(f"{raw}:by:type:{kind}", {i: when})
        pipe.sadd(f"{raw}:values:type", kind)
        pipe.execute()

    for write in (ours, script, plain):
        write(-1)
    return ours, script, plain


def statistic_writers(client: Any, tag: str) -> tuple[Callable[[int], None], ...]:
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


EVENT_RAW = ("incr", "incrby", "hset", "zadd", "sadd")  # redis-py sends INCR as INCRBY 1
#: Ours' commands when a record goes as a transaction (``events/fast.py``), with EVALSHA for
#: the script call that reserves each block of ids. The commands a script calls count in their
#: own statistics too: that script call's are counted twice (ours' figure is a bound above).
OURS_TRANSACTION = (
    "evalsha",
    "exists",
    "get",
    "smembers",
    "hset",
    "pexpire",
    "renamenx",
    "del",
    "zadd",
    "sadd",
    "zremrangebyscore",
)
STATISTIC_RAW = ("hget", "hset", "hincrby", "hincrbyfloat")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writes", type=int, default=3000, help="writes timed per round")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--block", type=int, default=200, help="writes per turn of a side")
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
            rows: list[list[Side]] = []
            for round_ in range(options.rounds):
                *mine, plain = writers(client, f"{label} {round_}")
                own = [OURS_TRANSACTION, None] if len(mine) > 1 else [None]
                sides = [*zip(mine, own, strict=True), (plain, raw_names)]
                rows.append(measure_round(client, sides, options.writes, options.block))
            report(label, [(row[0], row[-1]) for row in rows])
            if len(rows[0]) > 2:
                alone = [(row[1], row[-1]) for row in rows]
                report(f"{label} through the script alone", alone, ("script", "raw"))
                report(label, [(row[0], row[1]) for row in rows], ("ours", "script"))
    finally:
        server.cleanup()


Side = tuple[float, float, float]


def report(
    label: str, rows: list[tuple[Side, Side]], names: tuple[str, str] = ("ours", "raw")
) -> None:
    a, b = names
    print(f"\n{label}: {a} / {b}, each round")
    heads = ("round", f"{a}/s", f"{b}/s", "rate", "best", f"{a} µs", f"{b} µs", "time")
    widths = (5, 8, 8, 6, 6, 8, 7, 6)
    print(" ".join(f"{h:>{w}}" for h, w in zip(heads, widths, strict=True)))
    rates, bests, times = [], [], []
    for i, ((o_rate, o_us, o_best), (r_rate, r_us, r_best)) in enumerate(rows):
        rates.append(o_rate / r_rate)
        bests.append(o_best / r_best)
        times.append(o_us / r_us)
        print(
            f"{i:>5} {o_rate:8,.0f} {r_rate:8,.0f} {rates[-1]:6.2f} {bests[-1]:6.2f} "
            f"{o_us:8.2f} {r_us:7.2f} {times[-1]:6.2f}"
        )
    best = max(o[2] for o, _ in rows) / max(r[2] for _, r in rows)
    for name, ratios in (
        (f"throughput {a}/{b}", rates),
        (f"throughput of the fastest blocks {a}/{b}", bests),
        (f"Redis time {a}/{b}", times),
    ):
        print(
            f"{name}: min {min(ratios):.2f} median {statistics.median(ratios):.2f} "
            f"max {max(ratios):.2f}"
        )
    print(f"fastest block of the run, {a} / {b}: {best:.2f}")


if __name__ == "__main__":
    main()
