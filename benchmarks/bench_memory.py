"""Memory with no cleaner running: four scenarios, written through the public API with simulated
time (ending now), measured as ``MEMORY USAGE`` summed over every key they leave.

    .venv/bin/python benchmarks/bench_memory.py [--baseline REF | --no-baseline]
        [--counter-days 30] [--site-days 7] [--views 50] [--event-days 3] [--bitmap-days 150]

Each scenario runs twice on the same private redis-server in the same run: with this checkout,
and with the package as it was at ``REF`` (default: main just before write-time retention,
``common.BASELINE_REF``), extracted from git and run in a subprocess under another key prefix.
That second figure is "today's". Goals (issue 10):

- one default counter written every second for 30 days: at most 40 KB (the floor: 7 hashes of
  120 compact fields, about 17 KB);
- the middleware's counters of a 50-view site (``hits`` and one counter per view, one request a
  second, merged per second as the sender merges them) over 7 days: at most 2 MB;
- an event series with 1 day of retention fed 3 days at one event every 10 s: at most 1.1 days
  of events held, and no orphan key (an event hash outside the time index, an index entry or a
  time entry without its event, a value without its index);
- a bitmap marked daily for 150 days (1,000 users a day among 100,000): it holds exactly the
  periods ``BITMAP_RETENTION`` keeps (92 days, and the weeks and months of the 150 days).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

from common import BASELINE_REF, baseline_tree, configure, run_worker, start, use_tree

DAY = 86400
GOALS = {"counter": 40 * 2**10, "site": 2 * 2**20}


def memory(client: Any, prefix: str) -> tuple[int, int]:
    """(keys, bytes): ``MEMORY USAGE ... SAMPLES 0`` summed over every key under ``prefix``."""
    keys = list(client.scan_iter(match=f"{prefix}:*", count=1000))
    pipe = client.pipeline(transaction=False)
    for key in keys:
        pipe.memory_usage(key, samples=0)
    return len(keys), sum(int(size or 0) for size in pipe.execute())


def counter_scenario(days: int, now: float) -> None:
    from django_redis_metrics import Batch, Counter

    counter = Counter("written every second")
    start = int(now) - days * DAY
    for chunk in range(start, int(now), 2000):
        with Batch() as batch:
            for second in range(chunk, min(chunk + 2000, int(now))):
                counter.incr(when=second, batch=batch)


def site_scenario(days: int, views: int, now: float) -> None:
    """One request a second to one of ``views`` views, recorded as the middleware records it
    (``hits`` and ``hits:<view>``) and merged as its sender merges a batch of requests."""
    from django_redis_metrics.sending.writes import Submission, Writes, build_batch

    rng = random.Random(50)
    start = int(now) - days * DAY
    for chunk in range(start, int(now), 2000):
        submissions = []
        for second in range(chunk, min(chunk + 2000, int(now))):
            writes = Writes()
            writes.incr("hits")
            writes.incr(f"hits:view-{rng.randrange(views)}")
            submissions.append(Submission(writes, second))
        build_batch(submissions).execute()


def events_scenario(days: int, now: float) -> dict[str, Any]:
    from django_redis_metrics import Batch, EventSeries, get_redis_connection

    series = EventSeries("downloads", index=["file"], retention=DAY)
    rng = random.Random(3)
    start = now - days * DAY
    stamps = [start + 10 * i for i in range(days * DAY // 10)]
    for index in range(0, len(stamps), 1000):
        with Batch() as batch:
            for stamp in stamps[index : index + 1000]:
                series.record(
                    stamp, batch=batch, file=f"f{rng.randrange(20)}", user=rng.randrange(500)
                )
    client = get_redis_connection()
    held = client.zrange(series.key("time"), 0, -1, withscores=True)
    ids = {int(member) for member, _ in held}
    span = (held[-1][1] - held[0][1]) / DAY if held else 0.0
    prefix = series.key("")
    orphans = 0
    for key in client.scan_iter(match=f"{prefix}*", count=1000):
        name = key.decode()
        if ":e:" in name and int(name.rsplit(":", 1)[1]) not in ids:
            orphans += 1
        if ":by:" in name:
            orphans += sum(1 for member in client.zrange(name, 0, -1) if int(member) not in ids)
    pipe = client.pipeline(transaction=False)
    for event_id in ids:
        pipe.exists(series.key("e", event_id))
    orphans += sum(1 for found in pipe.execute() if not found)
    for value in client.smembers(series.key("values", "file")):
        orphans += 0 if client.exists(series.key("by", "file", value.decode())) else 1
    return {"events": len(ids), "days_held": span, "orphans": orphans}


def bitmap_scenario(days: int, now: float) -> dict[str, Any]:
    from django_redis_metrics import Batch, UniqueBitmap, get_redis_connection
    from django_redis_metrics.core.periods import Day

    active = UniqueBitmap("active")
    rng = random.Random(150)
    for days_ago in range(days - 1, -1, -1):
        when = now - days_ago * DAY
        with Batch() as batch:
            for user in rng.sample(range(100_000), 1000):
                active.mark(user, when=when, batch=batch)
    client = get_redis_connection()
    held = {m.decode() for m in client.zrange(active.index_key("day"), 0, -1)}
    stored = sum(1 for d in range(days) if client.exists(active.key(Day.containing(now - d * DAY))))
    today = Day.containing(now)
    retained = {today.shift(-i).suffix for i in range(92)}
    return {"day_keys": stored, "indexed_days": len(held), "exactly_retained": held == retained}


def run_all(url: str, prefix: str, options: argparse.Namespace) -> dict[str, Any]:
    """Every scenario under its own prefix; returns (keys, bytes) and the checks of each."""
    from django_redis_metrics import get_redis_connection

    now = options.now
    results: dict[str, Any] = {}
    for name, action in (
        ("counter", lambda: counter_scenario(options.counter_days, now)),
        ("site", lambda: site_scenario(options.site_days, options.views, now)),
        ("events", lambda: events_scenario(options.event_days, now)),
        ("bitmap", lambda: bitmap_scenario(options.bitmap_days, now)),
    ):
        scope = f"{prefix}{name}"
        configure(url, scope)
        started = time.perf_counter()
        checks = action() or {}
        keys, size = memory(get_redis_connection(), scope)
        results[name] = {
            "keys": keys,
            "bytes": size,
            "seconds": time.perf_counter() - started,
            **checks,
        }
    return results


def human(size: float) -> str:
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size:,.0f} B"


def verdict(name: str, result: dict[str, Any], options: argparse.Namespace) -> str:
    if name in GOALS:
        return f"<= {human(GOALS[name])}: {'met' if result['bytes'] <= GOALS[name] else 'MISSED'}"
    if name == "events":
        met = result["days_held"] <= 1.1 and result["orphans"] == 0
        detail = f"{result['events']:,} events over {result['days_held']:.2f} days, "
        return f"{detail}{result['orphans']} orphans: {'met' if met else 'MISSED'}"
    met = result["exactly_retained"]
    detail = f"{result['day_keys']} day keys, {result['indexed_days']} indexed"
    return f"{detail}, only the 92 retained: {'met' if met else 'MISSED'}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE_REF, help="git ref of 'today'")
    parser.add_argument("--no-baseline", action="store_true")
    parser.add_argument("--counter-days", type=int, default=30)
    parser.add_argument("--site-days", type=int, default=7)
    parser.add_argument("--views", type=int, default=50)
    parser.add_argument("--event-days", type=int, default=3)
    parser.add_argument("--bitmap-days", type=int, default=150)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--now", type=float, default=time.time(), help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.worker:  # a baseline run: the earlier package, the same server
        use_tree(options.worker)
        print(json.dumps(run_all(options.url, "today-", options)))
        return
    server = start()
    try:
        client = server.client()
        ours = run_all(server.url, "now-", options)
        today: dict[str, Any] = {}
        if not options.no_baseline:
            args = [
                f"--{k.replace('_', '-')}={v}"
                for k, v in vars(options).items()
                if k.endswith("days") or k in ("views", "now")
            ]
            today = run_worker(
                Path(__file__), baseline_tree(options.baseline), "--url", server.url, *args
            )
        print(
            f"Redis {client.info('server')['redis_version']}; memory = MEMORY USAGE summed "
            f"over the keys each scenario left; today = {options.baseline} (no cleaner run)"
        )
        print(
            f"{'scenario':9} {'keys':>7} {'memory':>10} {'today: keys':>12} {'memory':>10}"
            f" {'ratio':>8}  goal"
        )
        for name, result in ours.items():
            then = today.get(name, {})
            ratio = "-"
            if then:
                times = then["bytes"] / result["bytes"]
                ratio = f"{times:,.0f}x" if times >= 10 else f"{times:.1f}x"
            print(
                f"{name:9} {result['keys']:>7,} {human(result['bytes']):>10} "
                f"{then.get('keys', 0):>12,} {human(then.get('bytes', 0)):>10} {ratio:>8}  "
                f"{verdict(name, result, options)}"
            )
            if name in ("events", "bitmap") and then:
                print(f"{'':9} today: {verdict(name, then, options)}")
    finally:
        server.cleanup()


if __name__ == "__main__":
    sys.exit(main())
