"""UniqueEstimate: the cost of an add, of a count, of a range, and a period key's memory.

Starts its own private redis-server. Each figure is printed beside a baseline measured in the
same run on the same server: an add and a count against a ``PING`` round trip (and an add
against ``UniqueBitmap.mark``, also in Redis's own time from ``INFO commandstats``), a range
(Redis's own time, per key merged) beside a single-key ``PFCOUNT``, memory against a
``UniqueBitmap`` day key holding as many users, and the observed error against HyperLogLog's
standard error (0.81 %).

Population of the range keys is direct (``PFADD`` of many items per command, into the keys
``add`` would write): what the write path would have produced, faster.

    python benchmarks/bench_estimates.py              # quick
    python benchmarks/bench_estimates.py --items 1000000 --repeat 2000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import best_of, start


def per_call_us(repeat: int, action: object) -> float:
    """Best-of-5 mean time of ``repeat`` calls of ``action``, in microseconds."""
    assert callable(action)

    def many() -> None:
        for _ in range(repeat):
            action()

    return best_of(5, many) / repeat * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=200_000, help="distinct items counted")
    parser.add_argument("--repeat", type=int, default=500, help="calls per timed figure")
    options = parser.parse_args()

    server = start("bench")
    try:
        from django_redis_metrics import UniqueBitmap, UniqueEstimate, get_redis_connection
        from django_redis_metrics.core.periods import Day

        client = get_redis_connection()
        visitors = UniqueEstimate("visitors")
        visitors.add("warm-up")
        ping = per_call_us(options.repeat, client.ping)
        counter = iter(range(10**9))

        def server_us(action: object) -> tuple[float, float]:
            """Wall time per call, and Redis's own time per EVALSHA (INFO commandstats)."""
            client.config_resetstat()
            wall = per_call_us(options.repeat, action)
            stats = client.info("commandstats").get("cmdstat_evalsha", {})
            return wall, float(stats.get("usec_per_call", 0.0))

        add, add_redis = server_us(lambda: visitors.add(next(counter)))
        marked = UniqueBitmap("marked")
        marked.mark(0)
        mark, mark_redis = server_us(lambda: marked.mark(next(counter) % 100_000))
        count = per_call_us(options.repeat, lambda: visitors.count("day"))
        print(f"round trip (PING)            {ping:8.1f} us")
        print(
            f"add (3 periods)              {add:8.1f} us   {add / ping:5.2f}x PING; "
            f"Redis time {add_redis:.1f} us"
        )
        print(
            f"UniqueBitmap.mark (3 periods){mark:8.1f} us   {mark / ping:5.2f}x PING; "
            f"Redis time {mark_redis:.1f} us"
        )
        print(f"count('day')                 {count:8.1f} us   {count / ping:5.2f}x PING")

        today = Day.containing(time.time())
        day_key = visitors.key(today)
        client.delete(day_key)
        chunk = 10_000
        sizes = {}
        for done in range(0, options.items, chunk):
            client.pfadd(day_key, *(f"user-{n}" for n in range(done, done + chunk)))
            if done + chunk in (10_000, options.items):
                sizes[done + chunk] = client.memory_usage(day_key)
        client.pfadd("bench:sparse", *range(100))
        sizes[100] = client.memory_usage("bench:sparse")
        bitmap = UniqueBitmap("bitmap_users")
        bitmap.mark(0)
        bitmap_key = bitmap.key(Day.containing(time.time()))
        client.setbit(bitmap_key, options.items - 1, 1)
        estimate = visitors.count("day")
        error = (estimate - options.items) / options.items * 100
        print(
            f"day key, {options.items:,} items: {estimate:,} counted ({error:+.2f} %, HLL's "
            "standard error 0.81 %)"
        )
        for items, size in sorted(sizes.items()):
            print(f"  memory at {items:>9,} items   {size:8,} bytes")
        print(
            f"  a bitmap day key for ids up to {options.items:,}: "
            f"{client.memory_usage(bitmap_key):,} bytes"
        )

        # Ranges: dense keys, counted together by one PFCOUNT or in steps of MAX_COUNT_KEYS.
        daily = UniqueEstimate("daily", periods=("day",))
        days = [today.shift(-i) for i in range(90)]
        for i, day in enumerate(days):
            client.pfadd(daily.key(day), *(f"u{n}" for n in range(i * 1000, i * 1000 + 20_000)))

        def redis_us(action: object) -> float:
            """Redis's own time per call of ``action`` (PFCOUNT and EVALSHA, commandstats)."""
            assert callable(action)
            client.config_resetstat()
            for _ in range(20):
                action()
            stats = client.info("commandstats")
            return (
                sum(
                    float(stats.get(f"cmdstat_{name}", {}).get("usec", 0))
                    for name in ("pfcount", "evalsha")
                )
                / 20
            )

        single = redis_us(lambda: client.pfcount(daily.key(today)))
        print(f"PFCOUNT of one dense key     {single:8.1f} us of Redis time (cached cardinality)")
        for span in (7, 30, 64, 90):
            query = daily.last(span)
            took = redis_us(query.count)
            print(
                f"range of {span:2d} day keys        {took:8.1f} us   {took / span:5.1f} us per "
                f"key   (count {query.count():,}, truth {span * 1000 + 19_000:,})"
            )
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
