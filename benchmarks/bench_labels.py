"""Labelled counters: what a write to a series and a read of a whole labelled metric cost.

    python benchmarks/bench_labels.py [--series 10,100,1000] [--writes 5000] [--repeats 5]

Writes: ``incr()`` one by one on an admitted series against ``incr()`` on a plain counter, on the
same server in the same run (a series is a counter of its own: the ratio should be about 1);
and the first write of new label sets (each one admitted by one more round trip).

Reads: ``total(86400)`` of a metric with N series against the raw floor measured in the same
run: the ``ZRANGEBYLEX`` listing its series, then one pipeline of ``HGETALL`` of each series'
daily hash, added up in Python. Printed as text, best of ``--repeats``.
"""

from __future__ import annotations

import argparse
import time

from common import best_of, start

DAY = 86400


def write_figures(writes: int) -> None:
    from django_redis_metrics import Counter

    now = time.time()
    plain = Counter("plain")
    series = Counter("labelled", labels=("view",)).labels(view="home")
    plain.incr(when=now)
    series.incr(when=now)  # admitted once
    plain_s = best_of(3, lambda: [plain.incr(when=now) for _ in range(writes)]) / writes
    series_s = best_of(3, lambda: [series.incr(when=now) for _ in range(writes)]) / writes
    fresh = Counter("fresh", labels=("view",), max_series=100_000)
    count = min(writes, 2000)
    started = time.perf_counter()
    for i in range(count):
        fresh.labels(view=f"v{i}").incr(when=now)
    first_s = (time.perf_counter() - started) / count
    print(f"incr() on a plain counter        {plain_s * 1e6:8.1f} µs")
    print(f"incr() on an admitted series     {series_s * 1e6:8.1f} µs  ({series_s / plain_s:.2f}x)")
    print(f"first incr() of a new label set  {first_s * 1e6:8.1f} µs  ({first_s / plain_s:.2f}x)")


def read_figures(sizes: list[int], repeats: int) -> None:
    from django_redis_metrics import Counter, get_redis_connection
    from django_redis_metrics.core.keys import catalogue_key, metric_key
    from django_redis_metrics.core.labels.labelling import series_range

    client = get_redis_connection()
    now = time.time()
    print(f"\n{'series':>8} {'total(86400)':>14} {'raw floor':>12} {'ratio':>7}")
    for size in sizes:
        metric = Counter(f"read{size}", labels=("view",), max_series=max(size, 1))
        for i in range(size):
            metric.labels(view=f"v{i}").incr(i + 1, when=now)
        expected = size * (size + 1) // 2
        assert metric.total(DAY) == expected

        def floor(name: str = metric.name) -> int:
            low, high = series_range(name)
            members = client.zrangebylex(catalogue_key("counter"), low, high)
            pipe = client.pipeline(transaction=False)
            for member in members:
                pipe.hgetall(metric_key("counter", member.decode(), DAY))
            return sum(int(v) for found in pipe.execute() for v in found.values())

        assert floor() == expected
        ours = best_of(repeats, lambda m=metric: m.total(DAY))
        raw = best_of(repeats, floor)
        print(f"{size:>8} {ours * 1000:>11.2f} ms {raw * 1000:>9.2f} ms {ours / raw:>6.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--series", default="10,100,1000")
    parser.add_argument("--writes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    server = start("bench-labels")
    try:
        write_figures(args.writes)
        read_figures([int(n) for n in args.series.split(",")], args.repeats)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
