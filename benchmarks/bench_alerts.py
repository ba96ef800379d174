"""Alerts: what one evaluation pass costs, against reading the same values one by one.

    python benchmarks/bench_alerts.py [--alerts 10,100,1000] [--repeats 5]

For N alerts on N counter series (over=300: 61 slices of 5 seconds each), an evaluation pass
(``evaluate(now, webhooks=False)``: every value read in one pipeline, every transition in one
pipeline of script calls) against the baseline measured in the same run on the same server: the
same N values read by N ``series.recent(5, 61, until=now)`` calls, one round trip each, with no
state written at all (what an evaluator without batching would spend on its reads alone).
Printed as text, best of ``--repeats``.
"""

from __future__ import annotations

import argparse
import logging
import time

from common import best_of, start


def figures(sizes: list[int], repeats: int) -> None:
    from django_redis_metrics import Alert, Counter
    from django_redis_metrics.alerts import evaluate

    logging.getLogger("django_redis_metrics.alerts").setLevel(logging.ERROR)  # firing is logged
    now = time.time()
    print(f"{'alerts':>7} {'pass':>11} {'one by one':>12} {'ratio':>7} {'per alert':>11}")
    for size in sizes:
        hits = Counter(f"hits{size}", labels=("view",), max_series=size, precisions=[5, 60])
        series = [hits.labels(view=f"v{i}") for i in range(size)]
        for index, each in enumerate(series):
            each.incr(index % 20, when=now - 1)
        alerts = [Alert(f"a{size}-{i}", s, above=10, over=300) for i, s in enumerate(series)]
        evaluate(now, alerts=alerts, webhooks=False)  # scripts loaded, states created
        ours = best_of(repeats, lambda a=alerts: evaluate(now, alerts=a, webhooks=False))
        raw = best_of(repeats, lambda s=series: [each.recent(5, 61, until=now) for each in s])
        print(
            f"{size:>7} {ours * 1000:>8.2f} ms {raw * 1000:>9.2f} ms {ours / raw:>6.2f}x "
            f"{ours / size * 1e6:>8.1f} µs"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alerts", default="10,100,1000")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    server = start("bench-alerts")
    try:
        figures([int(n) for n in args.alerts.split(",")], args.repeats)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
