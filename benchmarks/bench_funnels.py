"""Funnels and two-metric cohorts: what they cost against the queries one would write without them.

    python benchmarks/bench_funnels.py [--users 100000] [--events 100000] [--repeats 5]
        [--no-cluster]

In the same run and on the same servers (a private single node, then a 3-master Redis
Cluster), three bitmaps of ``--users`` users each (ids drawn from 1,000,000) marked over 30 days:

- ``Funnel.counts("day")`` of 3 steps against one query per step
  (``(a.day() & b.day()).count()``: a round trip each), and the same over a 30-day range and
  day by day (``over_time(30)`` against 30 ``counts``);
- ``cohort("day", periods=8, returning=other)`` against the one-bitmap table (the baseline the
  two-metric table should match on a single node) and against one query per cell;
- ``Funnel.ordered(...).counts`` over ``--events`` events of 3 types (single node).

Best of ``--repeats``, printed as text with the ratios.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from common import best_of, configure

DAY = 86400


def populate(users: int) -> list[Any]:
    from django_redis_metrics import UniqueBitmap

    rng = random.Random(7)
    now = time.time()
    bitmaps = [UniqueBitmap(name, periods=("day", "week", "month")) for name in ("v", "c", "b")]
    pool = list(range(1_000_000))
    share = 1.0
    for bitmap in bitmaps:
        chosen = rng.sample(pool, int(users * share))
        bitmap.mark_many((user, now - rng.randrange(30) * DAY) for user in chosen)
        share /= 3
    return bitmaps


def run(label: str, users: int, repeats: int, events: int) -> None:
    from django_redis_metrics import EventSeries, Funnel
    from django_redis_metrics.core.periods import Day

    v, c, b = populate(users)
    now = time.time()
    funnel = Funnel([v, c, b])
    start = now - 29 * DAY
    rows = []

    def naive_day() -> list[int]:
        return [v.day(now).count(), (v.day(now) & c.day(now)).count(),
                (v.day(now) & c.day(now) & b.day(now)).count()]  # fmt: skip

    def naive_range() -> list[int]:
        qv, qc, qb = (x.between(start, now) for x in (v, c, b))
        return [qv.count(), (qv & qc).count(), (qv & qc & qb).count()]

    def naive_days() -> list[list[int]]:
        today = Day.containing(now)
        return [funnel.counts(today.shift(-i)) for i in range(30)]

    assert funnel.counts("day", now) == naive_day()
    assert funnel.between(start, now).counts() == naive_range()
    rows.append(("counts('day'), 3 steps", lambda: funnel.counts("day", now), naive_day))
    rows.append(("between(30 days).counts()", lambda: funnel.between(start, now).counts(),
                 naive_range))  # fmt: skip
    rows.append(("over_time(30)", lambda: funnel.over_time(30, now), naive_days))
    first = Day.containing(now).shift(-7).start_ts

    def cells() -> list[list[int]]:
        days = [Day.containing(first).shift(i) for i in range(8)]
        return [[v.query(days[i]).count()] + [(v.query(days[i]) & b.query(days[j])).count()
                for j in range(i + 1, 8)] for i in range(8)]  # fmt: skip

    pair = v.cohort("day", first, 8, returning=b)
    assert pair == cells()
    rows.append(("cohort(8 days, returning=)", lambda: v.cohort("day", first, 8, returning=b),
                 lambda: v.cohort("day", first, 8)))  # fmt: skip
    rows.append(("  ... against a query per cell", lambda: v.cohort("day", first, 8, returning=b),
                 cells))  # fmt: skip
    print(f"{label}: {users} users in the first step")
    print(f"{'call':<34} {'ms':>8} {'baseline ms':>12} {'ratio':>7}")
    for name, ours, baseline in rows:
        mine, theirs = best_of(repeats, ours), best_of(repeats, baseline)
        print(f"{name:<34} {mine * 1000:>8.2f} {theirs * 1000:>12.2f} {mine / theirs:>7.2f}")
    if events:
        series = EventSeries(f"shop-{label}", index=["type"])
        rng = random.Random(3)
        batch = [
            {"when": now - rng.random() * DAY, "type": rng.choice(("view", "cart", "buy")),
             "user": rng.randrange(events // 10)}
            for _ in range(events)
        ]  # fmt: skip
        series.record_many(batch)
        ordered = Funnel.ordered(series, [{"type": "view"}, {"type": "cart"}, {"type": "buy"}])
        read = best_of(repeats, lambda: series.between(now - DAY, now))
        whole = best_of(repeats, lambda: ordered.counts(now - DAY, now))
        print(f"ordered counts over {events} events: {whole * 1000:.1f} ms "
              f"(reading them: {read * 1000:.1f} ms, ratio {whole / read:.2f})")  # fmt: skip
    print()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-cluster", action="store_true")
    options = parser.parse_args()
    from django_redis_metrics.testing import RedisClusterServers, RedisServer

    server = RedisServer().start()
    try:
        configure(server.url, "bench-funnels")
        run("single node", options.users, options.repeats, options.events)
    finally:
        server.cleanup()
    if options.no_cluster:
        return
    servers = RedisClusterServers(masters=3).start()
    try:
        configure(servers.url, "bench-funnels-cluster", CLUSTER=True)
        run("Redis Cluster", options.users, options.repeats, 0)
    finally:
        servers.stop()


if __name__ == "__main__":
    main()
