"""Side by side with the packages a site would pick instead, on one private Redis, in one run:
django-redis-metrics 2.2 (counters) and bitmapist 3.119 (bitmaps of users).

    python benchmarks/bench_peers.py [--rounds 3] [--users 1000000] [--marks-per-day 4000]

The peers live in a benchmark-only environment, ``.venv-peers`` (this checkout installed
editable beside ``benchmarks/peers-requirements.txt``): the first run creates it with pip and
runs itself there; they never enter the package's dependencies (their import names,
``redis_metrics`` and ``bitmapist``, differ from ours). Each figure alternates peer and ours
for ``--rounds`` rounds (in the reverse order every other round) and keeps the median; every
result is first checked against Python sets and sums, and nothing is printed if one disagrees.
The middleware row of issue 13's table is ``bench_middleware.py``'s.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "benchmarks" / "peers-requirements.txt"
VENV = ROOT / ".venv-peers"
DAY = 86400


def ensure_peers() -> None:
    """Run in ``.venv-peers`` (made on first use) unless the peers import here already."""
    try:
        import bitmapist  # noqa: F401
        import redis_metrics  # noqa: F401
    except ImportError:
        if os.environ.get("DRM_BENCH_PEERS"):
            raise SystemExit(f"the peers do not import in {sys.executable}") from None
        python = VENV / "bin" / "python"
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
            pip = [str(python), "-m", "pip", "install", "-q", "-e", str(ROOT)]
            subprocess.run([*pip, "-r", str(REQUIREMENTS)], check=True)
        os.environ["DRM_BENCH_PEERS"] = "1"
        os.execv(str(python), [str(python), __file__, *sys.argv[1:]])


class Trips:
    """Round trips made by every redis-py client of the process (packed writes sent)."""

    def __init__(self) -> None:
        from redis.connection import AbstractConnection

        self.count = 0
        original = AbstractConnection.send_packed_command

        def counting(connection: Any, *args: Any, **kwargs: Any) -> Any:
            self.count += 1
            return original(connection, *args, **kwargs)

        AbstractConnection.send_packed_command = counting  # type: ignore[method-assign]

    def during(self, action: Callable[[], object]) -> int:
        before = self.count
        action()
        return self.count - before


def interleaved(rounds: int, runs: dict[str, Callable[[int], float]]) -> dict[str, float]:
    """Median of ``rounds`` results per run, the runs alternating within each round, in the
    reverse order every other round (whatever drifts during a round, the CPU's clock, another
    process's load, the keyspace growing, falls on each side alike)."""
    results: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for index in range(rounds):
        for name in names if index % 2 == 0 else reversed(names):
            results[name].append(runs[name](index))
    return {name: statistics.median(values) for name, values in results.items()}


def per_second(count: int, action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return count / (time.perf_counter() - started)


def check(label: str, ours: object, peer: object, truth: object) -> None:
    if not ours == peer == truth:
        raise SystemExit(f"{label}: ours {ours!r}, peer {peer!r}, truth {truth!r}: no figures")


#: django-redis-metrics 2.2's settings, every one given (it fails on a missing SSL), down to
#: seconds so that it can answer "the last 120 minutes" at all.
PEER_DEFAULTS = {
    "CONNECTION_CLASS": None,
    "DB": 0,
    "PASSWORD": None,
    "SSL": False,
    "SOCKET_TIMEOUT": None,
    "SOCKET_CONNECTION_POOL": None,
    "MIN_GRANULARITY": "seconds",
    "MAX_GRANULARITY": "yearly",
    "MONDAY_FIRST_DAY_OF_WEEK": False,
    "USE_ISO_WEEK_NUMBER": False,
}
#: The table: (figure, peer, ours, ours/peer).
Row = tuple[str, str, str, float]


def rate(value: float) -> str:
    return f"{value:,.0f}/s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--users", type=int, default=1_000_000, help="highest user id + 1")
    parser.add_argument("--marks-per-day", type=int, default=4000, help="bulk load, 8 weeks")
    parser.add_argument("--one-by-one", type=int, default=3000, help="writes per round")
    options = parser.parse_args()
    ensure_peers()
    sys.path.insert(0, str(ROOT))
    import django
    from django.conf import settings

    from django_redis_metrics.testing import RedisServer

    server = RedisServer().start()
    try:
        settings.configure(
            INSTALLED_APPS=["django_redis_metrics"],
            USE_TZ=True,
            TIME_ZONE="UTC",
            DJANGO_REDIS_METRICS={"CONNECTION": server.url, "PREFIX": "ours"},
            REDIS_METRICS={**PEER_DEFAULTS, "HOST": "127.0.0.1", "PORT": server.port},
        )
        django.setup()
        import bitmapist

        bitmapist.setup_redis("bench", "127.0.0.1", server.port)
        rows: list[Row] = []
        notes: list[str] = []
        counters(options, rows)
        from peers_bitmaps import bitmaps

        bitmaps(options, rows, notes)
        print(f"\n{options.rounds} interleaved rounds, medians; Redis {redis_version()}\n")
        print(f"| figure | peer | ours | ours/peer |\n|{'---|' * 4}")
        for figure, peer, ours, ratio in rows:
            print(f"| {figure} | {peer} | {ours} | {ratio:.2f} |")
        print("| middleware added per request | see bench_middleware.py | | |")
        for note in notes:
            print(f"\n{note}")
    finally:
        server.stop()


def redis_version() -> str:
    from django_redis_metrics import get_redis_connection

    return str(get_redis_connection().info("server")["redis_version"])


def counters(options: argparse.Namespace, rows: list[Row]) -> None:
    """Counter writes one by one and in bulk, and the last 120 minutes read back."""
    from redis_metrics.utils import get_r

    from django_redis_metrics import Counter

    peer, n = get_r(), options.one_by_one
    hits = [Counter(f"hits{i}") for i in range(options.rounds)]
    ones = interleaved(
        options.rounds,
        {
            "peer": lambda i: per_second(n, lambda: [peer.metric(f"hits{i}") for _ in range(n)]),
            "ours": lambda i: per_second(n, lambda: [hits[i].incr() for _ in range(n)]),
        },
    )
    now = time.time()
    rng = random.Random(2)
    items = [(now - rng.uniform(60, 7200), 1 + i % 5) for i in range(n)]
    dated = [(datetime.fromtimestamp(t, UTC).replace(tzinfo=None), c) for t, c in items]
    bulk = interleaved(
        options.rounds,
        {
            "peer": lambda i: per_second(
                n, lambda: [peer.metric(f"bulk{i}", num=c, date=d) for d, c in dated]
            ),
            "ours": lambda i: per_second(n, lambda: Counter(f"bulk{i}").incr_many(items)),
        },
    )
    year = datetime.now(UTC).year
    theirs_total = int(peer.r.get(f"m:bulk0:y:{year}") or 0)
    check("counter bulk sums", Counter("bulk0").total(), theirs_total, sum(c for _, c in items))
    since = datetime.now(UTC).replace(tzinfo=None) - timedelta(minutes=120)

    def peer_recent() -> list[Any]:
        return list(peer.get_metric_history("hits0", since, granularity="minutes"))

    check(
        "counter one by one sums",
        sum(c for _, c in Counter("hits0").recent(60, 120)),
        sum(int(v) for _, v in peer_recent()),
        n,
    )
    reads = 200
    recent = interleaved(
        options.rounds,
        {
            "peer": lambda i: per_second(reads, lambda: [peer_recent() for _ in range(reads)]),
            "ours": lambda i: per_second(
                reads, lambda: [hits[0].recent(60, 120) for _ in range(reads)]
            ),
        },
    )
    for figure, result, peer_api, our_api in (
        ("counter write one by one", ones, "2.2 `metric()`", "`incr()`"),
        ("counter bulk", bulk, "no bulk API: `metric(date=)`", "`incr_many`"),
        ("last 120 minutes read", recent, "`get_metric_history(minutes)`", "`recent(60, 120)`"),
    ):
        rows.append(
            (
                figure,
                f"{peer_api} {rate(result['peer'])}",
                f"{our_api} {rate(result['ours'])}",
                result["ours"] / result["peer"],
            )
        )


if __name__ == "__main__":
    main()
