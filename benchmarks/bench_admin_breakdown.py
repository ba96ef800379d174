"""A labelled metric's page (``admin/breakdown.py``): the time to read and group its series for
the default chart (120 one-minute slices), against the same page of a plain metric holding the
same data under its own name, measured in the same run on the same server.

    python benchmarks/bench_admin_breakdown.py [--series 500] [--statistic-series 200]

Each series gets a value in every slice of the last two hours (the most reading and parsing):
``--series`` series of a counter labelled ``(view, status)`` and ``--statistic-series`` of a
statistic labelled the same way; the defaults are the most one page reads (``MAX_READ``,
``MAX_READ_STATISTIC``).
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from common import best_of, configure_admin_site, start

HOUR = 3600


def populate(series: int, statistic_series: int, now: float) -> None:
    from django_redis_metrics import Batch, Counter, Statistic

    rng = random.Random(7)
    hits = Counter("hits", labels=("view", "status"), precisions=[60, 3600])
    latency = Statistic("latency", labels=("view", "status"), precisions=[60, 3600])
    plain_hits = Counter("plain_hits", precisions=[60, 3600])
    plain_latency = Statistic("plain_latency", precisions=[60, 3600])
    starts = [now - ago for ago in range(0, 2 * HOUR, 60)]
    for index in range(series):
        labels = {"view": f"view{index // 5}", "status": f"{index % 5 + 1}xx"}
        counts = [(when, rng.randint(1, 20)) for when in starts]
        hits.labels(**labels).incr_many(counts)
        plain_hits.incr_many(counts)
        if index >= statistic_series:
            continue
        with Batch() as batch:
            for when in starts:
                value = rng.lognormvariate(3, 0.8)
                latency.labels(**labels).record(value, when=when, batch=batch)
                plain_latency.record(value, when=when, batch=batch)


def one_at_a_time(counter: Any, now: float) -> int:
    """The same slices read a series at a time (a round trip each), added up: the naive way."""
    from django_redis_metrics.core.drive import drive
    from django_redis_metrics.core.labels.aggregate import series_of_steps

    total = 0
    for series in drive(series_of_steps(counter)):
        total += sum(count for _, count in series.recent(60, 120, until=now))
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--series", type=int, default=500)
    parser.add_argument("--statistic-series", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    configure_admin_site()
    server = start("bench-breakdown")
    try:
        from django.http import QueryDict
        from django.test import RequestFactory

        from django_redis_metrics import Counter, Statistic
        from django_redis_metrics.admin.counters import counter_reading
        from django_redis_metrics.admin.statistics import statistic_reading

        now = time.time()
        populate(options.series, options.statistic_series, now)
        request = RequestFactory().get("/")
        labelled = Counter("hits", precisions=[60, 3600])
        plain = Counter("plain_hits", precisions=[60, 3600])
        chart, found = counter_reading(labelled, 60, QueryDict(""), now)
        assert found is not None and found.found.read == options.series
        assert chart.total == counter_reading(plain, 60, QueryDict(""), now)[0].total
        timer = Statistic("latency", precisions=[60, 3600])
        plain_timer = Statistic("plain_latency", precisions=[60, 3600])
        assert (
            statistic_reading(timer, 60, request, now)[1]["count"]
            == (statistic_reading(plain_timer, 60, request, now)[1]["count"])
        )
        results = {
            "counter, labelled": best_of(
                options.repeats, lambda: counter_reading(labelled, 60, QueryDict(""), now)
            ),
            "counter, plain": best_of(
                options.repeats, lambda: counter_reading(plain, 60, QueryDict(""), now)
            ),
            "counter, one series a round trip": best_of(
                options.repeats, lambda: one_at_a_time(labelled, now)
            ),
            "statistic, labelled": best_of(
                options.repeats, lambda: statistic_reading(timer, 60, request, now)
            ),
            "statistic, plain": best_of(
                options.repeats, lambda: statistic_reading(plain_timer, 60, request, now)
            ),
        }
        print(
            f"series: {options.series} of a counter, {options.statistic_series} of a statistic "
            "(each holding all 120 one-minute slices)"
        )
        for what, seconds in results.items():
            print(f"{what} page data: {seconds * 1000:.1f} ms")
        ratio = results["counter, labelled"] / results["counter, one series a round trip"]
        print(f"ratio counter labelled / one series a round trip: {ratio:.2f}")
        for kind in ("counter", "statistic"):
            ratio = results[f"{kind}, labelled"] / results[f"{kind}, plain"]
            print(f"ratio {kind} labelled / plain: {ratio:.1f}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
