"""The Views page's data (``admin/viewstats.py``): the time to find every view's metrics and
read their last hour and last day, against reading the same figures one view at a time (a
round trip per metric and window, the naive way), measured in the same run on the same server.

    python benchmarks/bench_admin_views.py [--views 100] [--every 60] [--repeats 5]

Each view gets what the middleware records over a day at one request every ``--every``
seconds (so with 60 every slice of the windows holds data, the most parsing): a latency
statistic and its 2xx/4xx counters and hit counter (default precisions and 120 samples).
"""

from __future__ import annotations

import argparse
import random
import time

from common import best_of, configure_admin_site, start

DAY = 86400


def populate(views: int, every: int, now: float) -> None:
    from django_redis_metrics import Batch, Counter, Statistic

    rng = random.Random(5)
    latency = Statistic("latency", labels=("view",))
    answers = Counter("hits", labels=("view", "status"))
    for index in range(views):
        view = f"view{index}"
        timer, ok = latency.labels(view=view), answers.labels(view=view, status="2xx")
        client_error = answers.labels(view=view, status="4xx")
        with Batch() as batch:
            for ago in range(0, DAY, every):
                when = now - ago
                timer.record(rng.lognormvariate(3, 0.8), when=when, batch=batch)
                ok.incr(when=when, batch=batch)
            client_error.incr(when=now, batch=batch)


def one_at_a_time(now: float) -> int:
    """The same figures read a metric and a window at a time (what the page avoids)."""
    from django_redis_metrics import Statistic, get_redis_connection
    from django_redis_metrics.admin.counters import window_plan
    from django_redis_metrics.admin.viewstats import find_views
    from django_redis_metrics.core.timeutil import slice_starts
    from django_redis_metrics.statistic.histogram import parse_merged

    client = get_redis_connection()
    views = find_views(client)
    statistics = [timer for view in views for timer in view.timers]
    counters = [c for view in views for found in view.status.values() for c in found]
    for metric in [*statistics, *counters]:
        for seconds in (3600, DAY):
            plan = window_plan(metric, seconds)
            if plan is not None:
                texts = client.hmget(metric.key(plan[0]), slice_starts(*plan, now))
                if isinstance(metric, Statistic):
                    parse_merged(texts)
    return len(statistics)


def pipelined(now: float) -> int:
    from django_redis_metrics import get_redis_connection
    from django_redis_metrics.admin.viewstats import find_views, view_figures

    views = find_views(get_redis_connection())
    view_figures(views, now)
    return len(views)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--views", type=int, default=100)
    parser.add_argument("--every", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    configure_admin_site()
    server = start("bench-views")
    try:
        now = time.time()
        populate(options.views, options.every, now)
        assert pipelined(now) == options.views
        page = best_of(options.repeats, lambda: pipelined(now))
        naive = best_of(options.repeats, lambda: one_at_a_time(now))
        print(
            f"views: {options.views}, a request every {options.every} s for a day "
            "(each: 1 statistic series, 2 counter series; hour and day windows)"
        )
        print(f"Views page data, 3 round trips: {page * 1000:.1f} ms")
        print(f"one round trip per metric and window: {naive * 1000:.1f} ms")
        print(f"ratio page / one at a time: {page / naive:.2f}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
