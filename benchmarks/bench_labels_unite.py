"""Labelled bitmaps and estimates: what a read of the whole metric (the union of its series) costs.

    python benchmarks/bench_labels_unite.py [--series 10,100,1000] [--per-series 200]
        [--ids 1000000] [--repeats 5] [--no-cluster]

For N series of ``--per-series`` users each (ids drawn from ``--ids``; 200 of 1,000,000 makes
sparse 125 KB bitmaps, which travel as DUMP on Redis Cluster), against a plain bitmap and a plain
estimate holding the same users, in the same run and on the same servers:

- ``count("day")`` and ``last(7).count()`` of the labelled metric against the plain one (the
  ratio is what labels cost a reader of the whole metric);
- on a single node, the raw floor: one ``BITOP OR`` (or ``PFCOUNT``) over every series' key in
  one unbounded command, which the library splits in steps of 32 (64) keys;
- on a 3-master Redis Cluster, the bytes each series' union moves through the client.

Best of ``--repeats``, printed as text.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from common import best_of, configure

DAY = 86400


def populate(n: int, per_series: int, ids: int, tag: str) -> tuple[Any, Any, Any, Any]:
    """A labelled bitmap and estimate of ``n`` series, and plain ones with the same users."""
    from django_redis_metrics import UniqueBitmap, UniqueEstimate

    rng = random.Random(n)
    now = time.time()
    labelled = UniqueBitmap(f"{tag}-b{n}", labels=("shard",), max_series=max(n, 1))
    plain = UniqueBitmap(f"{tag}-pb{n}")
    visitors = UniqueEstimate(f"{tag}-e{n}", labels=("shard",), max_series=max(n, 1))
    mirror = UniqueEstimate(f"{tag}-pe{n}")
    everyone: list[tuple[object, float]] = []
    for shard in range(n):
        users = rng.sample(range(ids), per_series)
        marks = [(user, now) for user in users]
        labelled.labels(shard=shard).mark_many(marks)
        series = visitors.labels(shard=shard)
        for user in users:
            series.add(user, now)
        everyone += marks
    plain.mark_many(everyone)
    for user, _ in everyone:
        mirror.add(user, now)
    assert labelled.count("day") == plain.count("day")
    assert visitors.count("day") == mirror.count("day")
    return labelled, plain, visitors, mirror


def single_node(sizes: list[int], per_series: int, ids: int, repeats: int) -> None:
    from django_redis_metrics import get_redis_connection
    from django_redis_metrics.core.periods import Day
    from django_redis_metrics.testing import RedisServer

    server = RedisServer().start()
    try:
        configure(server.url, "bench-unite")
        client = get_redis_connection()
        print("single node")
        header = f"{'series':>7} {'read':<22} {'labelled':>10} {'plain':>10} {'ratio':>7}"
        print(f"{header} {'raw floor':>10} {'vs floor':>8}")
        for n in sizes:
            labelled, plain, visitors, mirror = populate(n, per_series, ids, "s")
            today = Day.containing(time.time())
            bitmap_keys = [labelled.labels(shard=i).key(today) for i in range(n)]
            estimate_keys = [visitors.labels(shard=i).key(today) for i in range(n)]

            def bitop_floor(keys: list[str] = bitmap_keys) -> int:
                pipe = client.pipeline(transaction=False)
                pipe.bitop("OR", "bench:floor", *keys)
                pipe.bitcount("bench:floor")
                pipe.delete("bench:floor")
                return int(pipe.execute()[1])

            def pfcount_floor(keys: list[str] = estimate_keys) -> int:
                return int(client.pfcount(*keys))

            rows = [
                ("bitmap count(day)", labelled, plain, lambda m: m.count("day"), bitop_floor),
                ("bitmap last(7).count()", labelled, plain, lambda m: m.last(7).count(), None),
                ("estimate count(day)", visitors, mirror, lambda m: m.count("day"), pfcount_floor),
                ("estimate last(7).count()", visitors, mirror, lambda m: m.last(7).count(), None),
            ]
            for what, ours, theirs, read, floor in rows:
                ours_s = best_of(repeats, lambda r=read, m=ours: r(m))
                plain_s = best_of(repeats, lambda r=read, m=theirs: r(m))
                line = (
                    f"{n:>7} {what:<22} {ours_s * 1e3:>7.2f} ms {plain_s * 1e3:>7.2f} ms "
                    f"{ours_s / plain_s:>6.1f}x"
                )
                if floor is not None:
                    floor_s = best_of(repeats, floor)
                    line += f" {floor_s * 1e3:>7.2f} ms {ours_s / floor_s:>7.2f}x"
                print(line)
    finally:
        server.stop()


def cluster(sizes: list[int], per_series: int, ids: int, repeats: int) -> None:
    from django_redis_metrics import get_redis_connection
    from django_redis_metrics.core.periods import Day
    from django_redis_metrics.testing import RedisClusterServers

    servers = RedisClusterServers(masters=3).start()
    try:
        configure(servers.url, "bench-unite-cluster", CLUSTER=True)
        client = get_redis_connection()
        print("\nRedis Cluster, 3 masters")
        print(
            f"{'series':>7} {'read':<22} {'labelled':>10} {'plain':>10} {'ratio':>7} "
            f"{'bytes/series':>13}"
        )
        for n in sizes:
            labelled, plain, visitors, mirror = populate(n, per_series, ids, "c")
            today = Day.containing(time.time())
            moved_bitmap = moved_estimate = 0
            for i in range(n):
                key = labelled.labels(shard=i).key(today)
                bits, length = int(client.bitcount(key)), int(client.strlen(key))
                moved_bitmap += len(client.dump(key)) if bits * 8 < length else length
                moved_estimate += len(client.get(visitors.labels(shard=i).key(today)))
            rows = [
                ("bitmap count(day)", labelled, plain, moved_bitmap),
                ("estimate count(day)", visitors, mirror, moved_estimate),
            ]
            for what, ours, theirs, moved in rows:
                ours_s = best_of(repeats, lambda m=ours: m.count("day"))
                plain_s = best_of(repeats, lambda m=theirs: m.count("day"))
                print(
                    f"{n:>7} {what:<22} {ours_s * 1e3:>7.2f} ms {plain_s * 1e3:>7.2f} ms "
                    f"{ours_s / plain_s:>6.1f}x {moved / max(n, 1):>13,.0f}"
                )
    finally:
        servers.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", default="10,100,1000")
    parser.add_argument("--per-series", type=int, default=200)
    parser.add_argument("--ids", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-cluster", action="store_true")
    args = parser.parse_args()
    sizes = [int(n) for n in args.series.split(",")]
    single_node(sizes, args.per_series, args.ids, args.repeats)
    if not args.no_cluster:
        cluster(sizes, args.per_series, args.ids, args.repeats)


if __name__ == "__main__":
    main()
