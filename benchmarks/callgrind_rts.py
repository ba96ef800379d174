"""Server instructions per operation, ours against RedisTimeSeries: the figures of bench_rts.py
that a busy machine cannot blur.

    python benchmarks/callgrind_rts.py [--ops 2000] [--baseline f68fbb4]

Runs the Redis 7.4 server of ``bench_rts.py`` (the module loaded) under ``valgrind
--tool=callgrind``, collecting inside ``processCommand`` only (a client's command, a script
with every call it makes included; no networking), and counts the instructions of ``--ops``
operations of each scenario: this checkout, the package at ``--baseline`` (in a subprocess,
same server) and the peer. Needs ``valgrind`` (Debian: the ``valgrind`` package).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

DAY = 86400
RULES = (5, 60, 300, 3600, 18000, 86400)


#: Live counters (series) incremented once a second, each increment opening its 1 s slice: for
#: ``WARM`` seconds (the script's first increments, the TTLs set), then ``SECONDS`` counted.
LIVE, WARM, SECONDS = 100, 3, 3


class Collector:
    """Zero the counters, run, dump: the instructions of what ran in between."""

    def __init__(self, pid: int, folder: Path) -> None:
        self.pid, self.folder = pid, folder

    def measure(self, action: Any) -> int:
        subprocess.run(["callgrind_control", "-z", str(self.pid)], check=True, capture_output=True)
        before = set(self.folder.glob("callgrind.out.*"))
        action()
        subprocess.run(["callgrind_control", "-d", str(self.pid)], check=True, capture_output=True)
        for _ in range(100):
            new = set(self.folder.glob("callgrind.out.*")) - before
            if new:
                text = max(new, key=lambda p: p.stat().st_mtime).read_text()
                found = re.search(r"^(?:summary|totals): (\d+)", text, re.M)
                if found:
                    return int(found.group(1))
            time.sleep(0.1)
        raise RuntimeError("callgrind wrote no dump")


def ours(url: str, tag: str, ops: int, pid: int, folder: str) -> dict[str, float]:
    """Instructions per operation of the package importable here."""
    from common import once_a_second

    from django_redis_metrics import Batch, Counter

    collect = Collector(pid, Path(folder))
    out: dict[str, float] = {}
    now = int(time.time())
    busy = Counter(f"{tag}:busy")
    for _ in range(3):
        busy.incr(when=now)
    out["incr, existing slices"] = (
        collect.measure(lambda: [busy.incr(when=now) for _ in range(ops)]) / ops
    )
    sparse, first = Counter(f"{tag}:sparse"), (now // DAY - 1) * DAY
    sparse.incr(when=first - 1)

    def a_second_each() -> None:
        with Batch() as batch:
            for t in range(first, first + ops):
                sparse.incr(when=t, batch=batch)

    out["incr, a new 1 s slice each"] = collect.measure(a_second_each) / ops
    live = [Counter(f"{tag}:live:{i}") for i in range(LIVE)]
    once_a_second(live, WARM, lambda counter: counter.incr())
    out["incr one by one, a live 1 s slice each"] = collect.measure(
        lambda: once_a_second(live, SECONDS, lambda counter: counter.incr())
    ) / (LIVE * SECONDS)
    bulk = Counter(f"{tag}:bulk")
    items = [(now - 100 + i % 100, 1) for i in range(1000)]
    bulk.incr_many(items)
    out["incr_many, 1000 in the last 100 s"] = collect.measure(lambda: bulk.incr_many(items)) / 1000
    hours = Counter(f"{tag}:hours")
    hours.incr_many((now - i, 1) for i in range(0, 7200, 7))
    out["recent(60, 120)"] = (
        collect.measure(lambda: [hours.recent(60, 120) for _ in range(50)]) / 50
    )
    out["series(60)"] = collect.measure(lambda: [hours.series(60) for _ in range(50)]) / 50
    return out


def peer(url: str, tag: str, ops: int, pid: int, folder: str) -> dict[str, float]:
    import redis
    from common import once_a_second

    client = redis.Redis.from_url(url)
    ts, collect = client.ts(), Collector(pid, Path(folder))

    def series(key: str) -> None:
        ts.create(key, retention_msecs=120_000, duplicate_policy="sum")
        for seconds in RULES:
            ts.create(f"{key}:{seconds}", retention_msecs=120 * seconds * 1000)
            ts.createrule(key, f"{key}:{seconds}", "sum", seconds * 1000)

    now = int(time.time())
    for name in ("busy", "sparse", "bulk", "hours"):
        series(f"{tag}:{name}")
    out: dict[str, float] = {}
    busy = f"{tag}:busy"
    ts.incrby(busy, 1)
    out["incr, existing slices"] = (
        collect.measure(lambda: [ts.incrby(busy, 1) for _ in range(ops)]) / ops
    )
    sparse, first = f"{tag}:sparse", (now // DAY - 1) * DAY

    def a_second_each() -> None:
        pipe = client.pipeline(transaction=False)
        for t in range(first, first + ops):
            pipe.execute_command("TS.INCRBY", sparse, 1, "TIMESTAMP", t * 1000)
        pipe.execute()

    out["incr, a new 1 s slice each"] = collect.measure(a_second_each) / ops
    live = [f"{tag}:live:{i}" for i in range(LIVE)]
    for key in live:
        series(key)
    once_a_second(live, WARM, lambda key: ts.incrby(key, 1))
    out["incr one by one, a live 1 s slice each"] = collect.measure(
        lambda: once_a_second(live, SECONDS, lambda key: ts.incrby(key, 1))
    ) / (LIVE * SECONDS)
    bulk = f"{tag}:bulk"
    items = [(bulk, (now - 100 + i % 100) * 1000, 1) for i in range(1000)]
    ts.madd(items)
    out["incr_many, 1000 in the last 100 s"] = collect.measure(lambda: ts.madd(items)) / 1000
    hours = f"{tag}:hours"
    ts.madd([(hours, (now - 7200 + i) * 1000, 1) for i in range(0, 7200, 7)])
    fine = f"{hours}:60"
    last = now * 1000
    out["recent(60, 120)"] = (
        collect.measure(lambda: [ts.range(fine, last - 7_200_000 + 1, last) for _ in range(50)])
        / 50
    )
    out["series(60)"] = collect.measure(lambda: [ts.range(fine, "-", "+") for _ in range(50)]) / 50
    return out


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        tree, url, tag, ops, pid, folder = sys.argv[2:8]
        from common import configure, use_tree

        use_tree(tree)
        configure(url, "base")
        print(json.dumps(ours(url, tag, int(ops), int(pid), folder)))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--baseline", default="f68fbb4")
    args = parser.parse_args()
    from bench_rts import ensure_peer
    from common import baseline_tree, configure

    from django_redis_metrics.testing import free_port

    binary, module, ssl = ensure_peer()
    folder = Path(tempfile.mkdtemp(prefix="drm-callgrind-"))
    port = free_port()
    server = subprocess.Popen(
        [
            "valgrind",
            "--tool=callgrind",
            "--toggle-collect=processCommand",
            f"--callgrind-out-file={folder}/callgrind.out.%p",
            str(binary),
            "--port",
            str(port),
            "--save",
            "",
            "--appendonly",
            "no",
            "--loadmodule",
            str(module),
            "--dir",
            str(folder),
        ],
        env={**os.environ, "LD_LIBRARY_PATH": str(ssl)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    try:
        import redis

        for _ in range(600):
            try:
                if redis.Redis(port=port).ping():
                    break
            except redis.ConnectionError:
                time.sleep(0.1)
        pid = str(server.pid)
        configure(url, "ours")
        now = ours(url, "new", args.ops, server.pid, str(folder))
        tree = baseline_tree(args.baseline)
        result = subprocess.run(
            [
                sys.executable,
                __file__,
                "--worker",
                str(tree),
                url,
                "old",
                str(args.ops),
                pid,
                str(folder),
            ],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONPATH": str(tree)},
        )
        before = json.loads(result.stdout.strip().splitlines()[-1])
        theirs = peer(url, "peer", args.ops, server.pid, str(folder))
        print("| server instructions per operation | ours now | ours before | peer | now / peer |")
        print("|---|---:|---:|---:|---:|")
        for name, value in now.items():
            print(
                f"| {name} | {value:,.0f} | {before[name]:,.0f} | {theirs[name]:,.0f} "
                f"| {value / theirs[name]:.2f} |"
            )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
