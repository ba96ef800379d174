"""The Prometheus exposition at 1,000, 10,000 and 100,000 series, against the raw floor
measured in the same run on the same server, and against the exposition of an earlier
version (``--baseline``, by default main before one family per metric).

    python benchmarks/bench_exposition_series.py [--sizes 1000 10000 100000] [--repeats 5]
    python benchmarks/bench_exposition_series.py --cluster  # on a local Redis Cluster

The series are counters' (the floor is defined on them), in two data sets: labelled counters
of 1,000 series each (``view`` x ``status``), and as many plain counters (the earlier version
cannot read series: its exposition fails on a name holding the separator). Every series is
written once. The floor is what no exposition can avoid: one ``ZRANGE`` of the catalogue and
a pipelined ``HGET`` of each series' lifetime total (1,000 a pipeline), decoded, with raw
redis-py. The exposition is the endpoint's work without HTTP: ``generate_latest`` over the
collector, text rendering by ``prometheus_client`` included. Best of ``--repeats`` runs each
(the baseline once at 100,000: it takes seconds).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import baseline_tree, best_of, configure, run_worker, start, use_tree

#: main before one family per metric (issue "Dimensions"): what "today" means here.
BASELINE = "2dc8057"
PER_METRIC = 1_000
STATUSES = ("2xx", "3xx", "4xx", "5xx")


def populate_plain(size: int) -> None:
    from django_redis_metrics import Batch, Counter

    for first in range(0, size, PER_METRIC):
        with Batch() as batch:
            for index in range(first, min(first + PER_METRIC, size)):
                Counter(f"counter{index}").incr(index % 7 + 1, batch=batch)


def populate(size: int) -> None:
    from django_redis_metrics import Batch, Counter

    for first in range(0, size, PER_METRIC):
        hits = Counter(f"hits{first // PER_METRIC}", labels=("view", "status"))
        with Batch() as batch:
            for index in range(first, min(first + PER_METRIC, size)):
                pairs = (("view", f"view{index // 4}"), ("status", STATUSES[index % 4]))
                hits.series_for(pairs).incr(index % 7 + 1, batch=batch)


def floor() -> int:
    """The raw floor: the catalogue, then every series' total, pipelined."""
    from django_redis_metrics import get_redis_connection
    from django_redis_metrics.core.keys import catalogue_key, metric_key

    client = get_redis_connection()
    members = [m.decode() for m in client.zrange(catalogue_key("counter"), 0, -1)]
    totals = []
    for start_ in range(0, len(members), 1000):
        pipe = client.pipeline(transaction=False)
        for member in members[start_ : start_ + 1000]:
            pipe.hget(metric_key("counter", member, "meta"), "t")
        totals += [int(value) for value in pipe.execute()]
    return len(totals)


def exposition() -> int:
    """The endpoint's work, HTTP aside (an earlier version's: its view's, as it was)."""
    try:
        from django_redis_metrics.exposition.views import render
    except ImportError:  # the baseline
        from prometheus_client import CollectorRegistry, generate_latest

        from django_redis_metrics.exposition.collector import MetricsCollector

        registry = CollectorRegistry(auto_describe=False)
        registry.register(MetricsCollector())
        return len(generate_latest(registry))
    return len(render("")[0])


def alternating(repeats: int, *actions: Callable[[], object]) -> list[float]:
    """The fastest of ``repeats`` runs of each action, in seconds, the actions taking turns
    (so that a burst of load elsewhere on the machine weighs on each alike)."""
    best = [float("inf")] * len(actions)
    for _ in range(repeats):
        for index, action in enumerate(actions):
            best[index] = min(best[index], best_of(1, action))
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--baseline", default=BASELINE, help="git ref of 'today'")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument(
        "--cluster", action="store_true", help="on a local 3-node Redis Cluster (no baseline)"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--prefix", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:  # a baseline run: the earlier package, the same server and data
        use_tree(options.worker)
        configure(options.url, options.prefix)
        repeats = 1 if options.size >= 100_000 else options.repeats
        print(json.dumps(best_of(repeats, exposition)))
        return
    server: Any = start()
    if options.cluster:
        from django_redis_metrics.testing import RedisClusterServers

        server.cleanup()
        server = RedisClusterServers().start()
    extra = {"CLUSTER": True} if options.cluster else {}
    tree = None if options.no_baseline or options.cluster else baseline_tree(options.baseline)
    rows = []
    try:
        for size in options.sizes:
            row: list[float] = [size]
            for data, fill in (("series", populate), ("plain", populate_plain)):
                prefix = f"{data}{size}"
                configure(server.url, prefix, **extra)
                fill(size)
                assert floor() == size
                row += alternating(options.repeats, floor, exposition)
            today = float("nan")
            if tree is not None:
                today = run_worker(
                    Path(__file__),
                    tree,
                    f"--url={server.url}",
                    f"--prefix=plain{size}",
                    f"--size={size}",
                    f"--repeats={options.repeats}",
                )
            rows.append((*row, today))
    finally:
        if options.cluster:
            server.stop()
        else:
            server.cleanup()
    print(f"Prometheus exposition of N counter series, seconds (best of {options.repeats}):")
    head = ("series", "floor", "now", "ratio", "plain", "floor", "now", "ratio", "today", "ratio")
    print("{:>8} {:>7} {:>7} {:>6} {:>7} {:>7} {:>7} {:>6} {:>7} {:>6}".format(*head))
    for size, floor_s, now_s, floor_p, now_p, today in rows:
        print(
            f"{size:8,.0f} {floor_s:7.3f} {now_s:7.3f} {now_s / floor_s:6.2f} {size:7,.0f} "
            f"{floor_p:7.3f} {now_p:7.3f} {now_p / floor_p:6.2f} {today:7.3f} "
            f"{today / floor_p:6.2f}"
        )
    print("(series: labelled counters; plain: as many unlabelled counters; today: the plain")
    print(f" counters exposed by {options.baseline}; ratio: against the floor of the same data)")


if __name__ == "__main__":
    main()
