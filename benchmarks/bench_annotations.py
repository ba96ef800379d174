"""Annotations: what a write, a read and a chart carrying them cost.

    python benchmarks/bench_annotations.py [--repeats 5] [--calls 2000]

On a private redis-server, in the same run:

- ``annotate()`` per call, against ``Counter.incr()`` (one script call each: the baseline),
  below the count kept and at it (every write then trims the oldest);
- ``annotations(start, end)`` of 10 and of 1,000 annotations;
- a counter chart's read (``counter_reading``, the admin's page and data endpoint) with no
  annotation in its range and with the 200 it draws at most, the same single round trip.

Best of ``--repeats`` runs of ``--calls`` calls, printed as text.
"""

from __future__ import annotations

import argparse
import time

from common import best_of, configure, configure_admin_site


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=2000)
    options = parser.parse_args()
    configure_admin_site()
    from django_redis_metrics.testing import RedisServer

    server = RedisServer().start()
    try:
        run(server.url, options.repeats, options.calls)
    finally:
        server.stop()


def run(url: str, repeats: int, calls: int) -> None:
    configure(url, "bench-notes", ANNOTATION_MAX_COUNT=1000)
    from django.http import QueryDict

    from django_redis_metrics import Counter, annotate, annotations, get_redis_connection
    from django_redis_metrics.admin.counters import counter_reading
    from django_redis_metrics.annotations.keys import log_key, seq_key

    client = get_redis_connection()
    counter = Counter("bench-hits", precisions=[60])
    now = time.time()

    def fill(count: int) -> None:
        client.delete(log_key(), seq_key())
        for i in range(count):
            annotate(f"Deploy v1.{i} of the site", when=now - i, tags=["deploy"])

    def writes(count: int) -> None:
        for i in range(count):
            annotate("Deploy v1.4 of the site", when=now - i % 500, tags=["deploy"])

    def best_from(kept: int, count: int) -> float:
        """The fastest of ``repeats`` runs of ``count`` writes, each from ``kept`` annotations."""
        best = float("inf")
        for _ in range(repeats):
            fill(kept)
            best = min(best, best_of(1, lambda: writes(count)))
        return best / count

    incr = best_of(repeats, lambda: [counter.incr(1, when=now) for _ in range(calls)]) / calls
    below = best_from(0, 500)  # the cap is 1,000: nothing trimmed
    at_cap = best_from(1000, calls)  # every write trims the oldest
    print(f"{'write':<36} {'per call':>10} {'vs incr':>8}")
    print(f"{'Counter.incr() (baseline)':<36} {incr * 1e6:>7.0f} us {1:>7.2f}x")
    print(f"{'annotate(), below the count kept':<36} {below * 1e6:>7.0f} us {below / incr:>7.2f}x")
    print(
        f"{'annotate(), at 1,000 kept (trims)':<36} {at_cap * 1e6:>7.0f} us {at_cap / incr:>7.2f}x"
    )

    print(f"\n{'read':<36} {'per call':>10}")
    for count in (10, 1000):
        fill(count)
        seconds = best_of(repeats * 10, lambda: annotations(now - 2000, now))
        found = len(annotations(now - 2000, now))
        print(f"{f'annotations() of {found}':<36} {seconds * 1e6:>7.0f} us")

    params = QueryDict(mutable=True)
    readings = []
    for count in (0, 1, 10, 200):
        client.delete(log_key(), seq_key())
        for i in range(count):
            annotate(f"Deploy {i}", when=now - 60 * (i % 100), tags=["deploy"])
        seconds = best_of(repeats * 20, lambda: counter_reading(counter, 60, params, now))
        drawn = len(counter_reading(counter, 60, params, now)[0].annotations)
        readings.append((drawn, seconds))
    print(f"\n{'counter chart read (120 slices)':<36} {'per call':>10} {'ratio':>8}")
    for drawn, seconds in readings:
        ratio = seconds / readings[0][1]
        print(f"{f'{drawn} annotations drawn':<36} {seconds * 1e6:>7.0f} us {ratio:>7.2f}x")


if __name__ == "__main__":
    main()
