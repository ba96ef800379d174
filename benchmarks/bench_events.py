"""EventSeries benchmark: record throughput against redis-benchmark's pipelined ZADD rate on the
same private redis-server in the same run, and query times at growing numbers of events.

    python benchmarks/bench_events.py                         # quick: 100k events
    python benchmarks/bench_events.py --events 1000000,10000000

Events are populated with ``record_many`` at a constant density (``--rate`` events per second of
event time), so every query range below holds the same number of events at every size: only the
total grows. Query times are the median of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django
from django.conf import settings

TYPES = ["view", "click", "purchase", "refund", "signup", "login", "logout", "search"]
DAY = 86400


def zadd_rate(port: int, requests: int) -> float:
    """redis-benchmark's pipelined (-P 100) ZADD requests per second on ``port``."""
    binary = shutil.which("redis-benchmark")
    if binary is None:
        raise SystemExit("redis-benchmark not found on PATH")
    out = subprocess.run(
        [
            binary,
            "-p",
            str(port),
            "-P",
            "100",
            "-n",
            str(requests),
            "-r",
            "1000000",
            "-t",
            "zadd",
            "-q",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    match = re.search(r"ZADD:\s*([\d.]+) requests per second", out.replace("\r", "\n"))
    if not match:
        raise SystemExit(f"cannot parse redis-benchmark output: {out!r}")
    return float(match.group(1))


def command_usec(client: Any) -> dict[str, int]:
    stats = client.info("commandstats")
    return {k: int(v["usec"]) for k, v in stats.items() if k != "cmdstat_info"}


def redis_seconds(before: dict[str, int], after: dict[str, int]) -> float:
    """Redis execution time between two INFO snapshots. Commands run by scripts are counted
    both on their own and inside EVALSHA, so when scripts ran only EVAL/EVALSHA count."""
    delta = {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}
    scripts = {k: v for k, v in delta.items() if k in ("cmdstat_evalsha", "cmdstat_eval")}
    return sum((scripts or delta).values()) / 1e6


def median_seconds(action: Callable[[], Any], repeat: int, client: Any) -> tuple[float, float]:
    """(median wall seconds, mean seconds of Redis execution time) of ``repeat`` runs."""
    times = []
    before = command_usec(client)
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), redis_seconds(before, command_usec(client)) / repeat


def populate(series: Any, start: float, first: int, count: int, rate: float) -> None:
    """Record events ``first .. first + count - 1`` at ``rate`` per second from ``start``."""
    rng = random.Random(first)
    chunk = 50_000
    for offset in range(first, first + count, chunk):
        n = min(chunk, first + count - offset)
        series.record_many(
            {
                "when": start + (offset + i) / rate,
                "type": TYPES[rng.randrange(8)],
                "user": rng.randrange(10_000),
            }
            for i in range(n)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--events",
        default="100000",
        help="comma-separated totals to measure queries at (default: 100000)",
    )
    parser.add_argument("--one-by-one", type=int, default=5000, help="record() calls timed")
    parser.add_argument("--batched", type=int, default=50_000, help="events timed in record_many")
    parser.add_argument("--zadd-requests", type=int, default=1_000_000)
    parser.add_argument("--rate", type=float, default=1.0, help="events per second of event time")
    parser.add_argument("--repeat", type=int, default=15)
    options = parser.parse_args()
    sizes = sorted(int(s) for s in options.events.split(","))

    from django_redis_metrics.testing import RedisServer

    server = RedisServer().start()
    try:
        settings.DJANGO_REDIS_METRICS = {"CONNECTION": server.url, "PREFIX": "bench"}
        django.setup()
        run(server, options, sizes)
    finally:
        server.stop()


def run(server: Any, options: argparse.Namespace, sizes: list[int]) -> None:
    from django_redis_metrics import EventSeries, get_redis_connection

    client = get_redis_connection()
    print(
        f"redis-server {client.info('server')['redis_version']} on port {server.port}; "
        f"{os.cpu_count()} CPUs (shared)"
    )
    zadd = zadd_rate(server.port, options.zadd_requests)
    print(f"redis-benchmark -P 100 ZADD: {zadd:,.0f} ops/s")

    warm = EventSeries("throughput", index=["type"])
    base = time.time() - 3600
    warm.record(base, type="view", user=1)
    started = time.perf_counter()
    for i in range(options.one_by_one):
        warm.record(base + i * 0.001, type=TYPES[i % 8], user=i)
    one = options.one_by_one / (time.perf_counter() - started)
    rows = [
        {"when": base + i * 0.001, "type": TYPES[i % 8], "user": i} for i in range(options.batched)
    ]
    started = time.perf_counter()
    warm.record_many(rows)
    batched = options.batched / (time.perf_counter() - started)
    print(f"record() one by one: {one:,.0f} events/s = {one / zadd:.3f} x ZADD rate")
    print(f"record_many batched: {batched:,.0f} events/s = {batched / zadd:.3f} x ZADD rate")
    warm.delete()

    series = EventSeries("bench", index=["type"])
    start = 1_700_000_000.0
    populated = 0
    results: dict[int, dict[str, tuple[float, float]]] = {}
    for size in sizes:
        began = time.perf_counter()
        populate(series, start, populated, size - populated, options.rate)
        took = time.perf_counter() - began
        print(
            f"\npopulated {size - populated:,} events in {took:.0f} s "
            f"({(size - populated) / took:,.0f}/s); used_memory "
            f"{client.info('memory')['used_memory'] / 2**30:.2f} GiB"
        )
        populated = size
        end = start + size / options.rate  # the newest event
        day = (end - DAY, end)
        hour = (end - 3600, end)
        timings = measure(series, client, day, hour, options.repeat)
        results[size] = timings
        print(
            f"{series.size():,} events, {series.count(*day):,} in the last 24h, "
            f"{series.count(*hour):,} in the last hour"
        )
        print(f"  {'query':38s} {'wall ms':>9s} {'Redis ms':>9s}")
        for label, (seconds, server) in timings.items():
            print(f"  {label:38s} {seconds * 1000:9.2f} {server * 1000:9.3f}")
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        print(f"\nratio {large:,} / {small:,} events (wall, Redis):")
        for label in results[small]:
            (wall_l, redis_l), (wall_s, redis_s) = results[large][label], results[small][label]
            print(f"  {label:38s} {wall_l / wall_s:6.2f}x {redis_l / redis_s:6.2f}x")


def measure(
    series: Any, client: Any, day: tuple[float, float], hour: tuple[float, float], repeat: int
) -> dict[str, tuple[float, float]]:
    slow = max(3, repeat // 3)
    return {
        "counts(24h, 288 x 300s)": median_seconds(
            lambda: series.counts(*day, 300, cache=False), repeat, client
        ),
        "counts(24h, 288 x 300s) cached": median_seconds(
            lambda: series.counts(*day, 300), repeat, client
        ),
        "count_by(type) indexed, 24h": median_seconds(
            lambda: series.count_by("type", *day), repeat, client
        ),
        "count(24h)": median_seconds(lambda: series.count(*day), repeat, client),
        "count_by(user) plain, 1h": median_seconds(
            lambda: series.count_by("user", *hour), slow, client
        ),
        "counts(1h, 12 x 300s)": median_seconds(
            lambda: series.counts(*hour, 300, cache=False), repeat, client
        ),
        "seed: fetch 1h, bucket in Python": median_seconds(
            lambda: seed_buckets(client, series.time_key, *hour, 300), slow, client
        ),
    }


def seed_buckets(client: Any, key: str, lo: float, hi: float, window: int) -> list[int]:
    """Seed 000's way: fetch every timestamp in range, count per window in Python."""
    first = int(lo // window)
    counts = [0] * (int(hi // window) - first + 1)
    for _, score in client.zrangebyscore(key, lo, hi, withscores=True):
        counts[int(score // window) - first] += 1
    return counts


if __name__ == "__main__":
    main()
