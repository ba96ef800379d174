"""Metrics through Redis faults: gunicorn under open-loop load, a fault at t = 10 s, every hit
accounted for.

For each fault: a private Redis (a single node with an append-only file, a local 3-master +
3-replica Redis Cluster for the failover, or a Sentinel-managed master with one replica and
three sentinels, ``redis+sentinel://``), gunicorn with 2 workers (``--preload``) serving a
tiny Django site with ``MetricsMiddleware`` (``faults_site.py``), and an open-loop client on
127.0.0.1 (in a process of its own, ``faults_load.py``) sending ``--rate`` requests a second
for ``--duration`` seconds, each on schedule whether or not the previous ones were answered
(latency counted from the scheduled time). At ``--fault-at`` the fault is applied; a poller
reads the ``hits`` counter every 20 ms, and for a failover another asks every live node (every
sentinel) every 20 ms whether it sees the promoted replica, both without retries. After the
load, the run waits until every worker's buffer has drained, stops gunicorn, and compares
``hits`` with the responses served:

- **lost** / **doubled**: responses served minus hits counted (or the reverse);
- **resumed**: seconds from Redis answering again (the pause ending, SIGCONT, the restarted
  server answering ``PING``, ``maxmemory`` lifted, every node agreeing on the promoted replica)
  to the first new hit counted; for the failover, also from the kill, with the moment the nodes
  agreed on the new master (the election) measured from the kill too;
- **p99**: request latency, over the whole run and over the fault window (from the fault until
  2 s after Redis answers).

The rows without a fault (a single node, then the cluster) are the baselines of the same run.

    .venv/bin/pip install -e ".[bench]"
    .venv/bin/python benchmarks/bench_faults.py [--rate 300] [--duration 25] [--only pause3s,kill]

Goals (issue 9): 0 lost and 0 doubled for pauses and stops up to 5 s and ``maxmemory`` refusals
up to 10 s; resumed <= 1 s after Redis answers; SIGKILL + restart with AOF: lost <= the writes
in flight at the kill; failover: 0 lost, resumed <= node timeout + 2 s after the kill; p99
<= 10 ms during every fault.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django
from django.conf import settings

from benchmarks.faults_load import Load
from django_redis_metrics.testing import RedisClusterServers, RedisServer, free_port
from django_redis_metrics.testing.sentinel import RedisSentinelServers

ROOT = Path(__file__).resolve().parent.parent

#: Seconds after Redis answers during which requests still count as "in the fault window".
WINDOW_AFTER = 2.0
#: Seconds of load before the measured run: served and counted, not timed.
WARM_UP = 2.0


@dataclass
class Redis:
    """The Redis of one run, and how the bench reads it."""

    url: str
    cluster: bool
    single: RedisServer | None = None
    servers: RedisClusterServers | None = None
    sentinel: RedisSentinelServers | None = None

    def stop(self) -> None:
        if self.single is not None:
            self.single.cleanup()
        if self.servers is not None:
            self.servers.stop()
        if self.sentinel is not None:
            self.sentinel.stop()


@dataclass
class Fault:
    """A fault: ``apply(redis)`` breaks Redis, blocks until it answers again and returns that
    moment (``time.monotonic()``)."""

    key: str
    label: str
    apply: Callable[[Redis], float] | None
    cluster: bool = False
    sentinel: bool = False

    @property
    def failover(self) -> bool:
        """Whether Redis answers again on another server (a promoted replica)."""
        return (self.cluster or self.sentinel) and self.apply is not None


def client_pause(milliseconds: int) -> Callable[[Redis], float]:
    def apply(redis: Redis) -> float:
        assert redis.single is not None
        started = time.monotonic()
        redis.single.client().execute_command("CLIENT", "PAUSE", milliseconds, "ALL")
        answers = started + milliseconds / 1000
        time.sleep(max(0.0, answers - time.monotonic()))
        return answers

    return apply


def sigstop(seconds: float) -> Callable[[Redis], float]:
    def apply(redis: Redis) -> float:
        assert redis.single is not None
        redis.single.pause()
        time.sleep(seconds)
        redis.single.resume()
        return time.monotonic()

    return apply


def kill_and_restart(seconds: float) -> Callable[[Redis], float]:
    def apply(redis: Redis) -> float:
        assert redis.single is not None
        redis.single.kill()
        time.sleep(seconds)
        redis.single.start()  # returns once it answers PING (its AOF loaded)
        return time.monotonic()

    return apply


def maxmemory(seconds: float) -> Callable[[Redis], float]:
    def apply(redis: Redis) -> float:
        assert redis.single is not None
        admin = redis.single.client()
        admin.config_set("maxmemory-policy", "noeviction")
        admin.config_set("maxmemory", "1mb")
        time.sleep(seconds)
        admin.config_set("maxmemory", 0)
        return time.monotonic()

    return apply


def failover(redis: Redis) -> float:
    assert redis.servers is not None
    dead = redis.servers.master_of("{hits}")
    dead.kill()
    while True:
        try:
            if redis.servers.failed_over(dead):
                return time.monotonic()
        except Exception:  # a node busy electing: ask again
            pass
        time.sleep(0.02)


def sentinel_promotion(forced: bool) -> Callable[[Redis], float]:
    """SIGKILL of the Sentinel-managed master, or ``SENTINEL FAILOVER`` while it runs (then
    with ``min-replicas-to-write 1``, without which the old master takes writes that the
    promotion loses); returns when every sentinel names the new master."""

    def apply(redis: Redis) -> float:
        assert redis.sentinel is not None
        old = redis.sentinel.current_master()
        if forced:
            redis.sentinel.refuse_writes_without_replica()
            redis.sentinel.failover()
        else:
            old.kill()
        while True:
            with contextlib.suppress(Exception):  # a sentinel busy electing: ask again
                if redis.sentinel.master_port() not in (None, old.port):
                    return time.monotonic()
            time.sleep(0.02)

    return apply


FAULTS = [
    Fault("none", "no fault (baseline)", None),
    Fault("pause300", "CLIENT PAUSE 300 ms", client_pause(300)),
    Fault("pause3s", "CLIENT PAUSE 3000 ms", client_pause(3000)),
    Fault("stop", "SIGSTOP 5 s", sigstop(5.0)),
    Fault("kill", "SIGKILL, restart after 5 s (AOF)", kill_and_restart(5.0)),
    Fault("oom", "maxmemory 1mb noeviction, 10 s", maxmemory(10.0)),
    Fault("clusternone", "Cluster 3+3: no fault (baseline)", None, cluster=True),
    Fault("failover", "Cluster 3+3: SIGKILL master of hits", failover, cluster=True),
    Fault("sentinelnone", "Sentinel 1+1: no fault (baseline)", None, sentinel=True),
    Fault("sentinelkill", "Sentinel 1+1: SIGKILL master", sentinel_promotion(False), sentinel=True),
    Fault(
        "sentinelfailover",
        "Sentinel 1+1: SENTINEL FAILOVER (min-replicas-to-write 1)",
        sentinel_promotion(True),
        sentinel=True,
    ),
]


@dataclass
class Result:
    fault: Fault
    served: int = 0
    failed: int = 0
    hits: int = 0
    latencies: list[tuple[float, float]] = field(default_factory=list)  # (scheduled, seconds)
    samples: list[tuple[float, int]] = field(default_factory=list)  # (time, hits counted)
    fault_at: float = 0.0
    answered_at: float = 0.0
    warnings: dict[str, int] = field(default_factory=dict)

    def p99(self, start: float = 0.0, end: float = float("inf")) -> float:
        chosen = sorted(seconds for at, seconds in self.latencies if start <= at <= end)
        if not chosen:
            return float("nan")
        return chosen[min(len(chosen) - 1, int(len(chosen) * 0.99))] * 1000

    def resumed(self) -> float | None:
        """The first moment after Redis answered at which more hits were counted than while
        it failed."""
        frozen = max(
            (total for at, total in self.samples if at <= self.answered_at),
            default=0,
        )
        for at, total in self.samples:
            if at > self.answered_at and total > frozen:
                return at
        return None


def start_redis(fault: Fault, node_timeout_ms: int) -> Redis:
    if fault.sentinel:
        managed = RedisSentinelServers(replicas=1, down_after_ms=node_timeout_ms).start()
        return Redis(managed.url, False, sentinel=managed)
    if fault.cluster:
        servers = RedisClusterServers(masters=3, replicas=1, node_timeout_ms=node_timeout_ms)
        servers.start()
        # A replica as the address: alive whichever master is killed.
        return Redis(servers.replicas[0].url, True, servers=servers)
    single = RedisServer(appendonly=True).start()
    return Redis(single.url, False, single=single)


def start_gunicorn(redis: Redis, prefix: str, log: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    env = {
        **os.environ,
        "DRM_CONNECTION": redis.url,
        "DRM_CLUSTER": "1" if redis.cluster else "0",
        "DRM_PREFIX": prefix,
    }
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "--preload",
        "--workers",
        "2",
        "--bind",
        f"127.0.0.1:{port}",
        "--pythonpath",
        f"{ROOT / 'benchmarks'},{ROOT}",
        "--log-level",
        "warning",
        "faults_site:application",
    ]
    with log.open("wb") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/page/", timeout=2):
                return process, port
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"gunicorn did not start: {log.read_text()}") from None
            time.sleep(0.1)


def hits_counted() -> int:
    from django_redis_metrics import Counter

    return Counter("hits").total(86400)


def poll(result: Result, stop: threading.Event) -> None:
    """Read ``hits`` every 20 ms with a client that fails at once (short timeout, no retries),
    each sample timed when its answer came: a slow, retried read would date its count late."""
    from django_redis_metrics.core.connection import fail_fast_connection, using_client

    with using_client(fail_fast_connection()):
        while not stop.is_set():
            with contextlib.suppress(Exception):  # Redis is away: that is the point
                counted = hits_counted()
                result.samples.append((time.monotonic(), counted))
            time.sleep(0.02)


def run(fault: Fault, options: argparse.Namespace, workdir: Path) -> Result:
    redis = start_redis(fault, options.node_timeout)
    prefix = f"faults{uuid.uuid4().hex[:8]}"
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": redis.url,
        "CLUSTER": redis.cluster,
        "PREFIX": prefix,
        "SOCKET_TIMEOUT": 0.5,
        "SOCKET_CONNECT_TIMEOUT": 0.5,
    }
    log = workdir / f"gunicorn-{fault.key}.log"
    result = Result(fault)
    process, port = start_gunicorn(redis, prefix, log)
    result.served = 1  # the request that saw gunicorn answer
    load = Load(port, options.rate)
    stop = threading.Event()
    poller = threading.Thread(target=poll, args=(result, stop), daemon=True)
    poller.start()
    # Warm up (workers, connections, scripts) at the same rate; served, not timed.
    load.start(time.monotonic() + 0.1, WARM_UP)
    warm = load.answers()
    result.served += sum(1 for _at, _seconds, status in warm if status == 200)
    start = time.monotonic() + 0.2
    load.start(start, options.duration)

    applied = threading.Event()

    def breaker() -> None:
        time.sleep(max(0.0, start + options.fault_at - time.monotonic()))
        result.fault_at = time.monotonic()
        result.answered_at = fault.apply(redis) if fault.apply else result.fault_at
        applied.set()
        # A server restarted here dies with the thread that started it (PR_SET_PDEATHSIG):
        # this thread lives until the run is over.
        stop.wait()

    faulting = threading.Thread(target=breaker)
    faulting.start()
    try:
        answers = load.answers()
        applied.wait()
        result.served += sum(1 for _at, _seconds, status in answers if status == 200)
        result.failed = sum(1 for _at, _seconds, status in answers if status != 200)
        result.latencies = [(at, seconds) for at, seconds, _status in answers]
        drained_by = time.monotonic() + 60
        last, changed = -1, time.monotonic()
        while time.monotonic() < drained_by and time.monotonic() - changed < 10:
            counted = hits_counted()
            if counted == result.served:
                break
            if counted != last:
                last, changed = counted, time.monotonic()
            time.sleep(0.2)
    finally:
        load.close()
        process.send_signal(signal.SIGTERM)  # workers flush at exit
        process.wait(30)
        with contextlib.suppress(Exception):
            result.hits = hits_counted()
        stop.set()
        poller.join()
        faulting.join()
    text = log.read_text(errors="replace")
    for kind in ("Metrics writes are waiting", "Metrics writes resumed", "Metrics buffer full"):
        result.warnings[kind] = text.count(kind)
    redis.stop()
    return result


def print_table(results: list[Result], options: argparse.Namespace) -> None:
    print(
        f"\n{options.rate:g} requests/s for {options.duration:g} s, fault at "
        f"t = {options.fault_at:g} s; gunicorn 2 workers (--preload); cluster node timeout "
        "and Sentinel down-after "
        f"{options.node_timeout} ms\n"
    )
    header = (
        "| fault | served | hits | lost | doubled | resumed after Redis answers | "
        "p99 all | p99 fault window | warnings (start/end/full) |"
    )
    print(header)
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for result in results:
        resumed = result.resumed() if result.fault.apply else None
        if resumed is None:
            after = "n/a" if not result.fault.apply else "never"
        else:
            after = f"{max(0.0, resumed - result.answered_at):.2f} s"
            if result.fault.failover:
                after += f" ({resumed - result.fault_at:.2f} s after the fault)"
        window = result.p99(result.fault_at, result.answered_at + WINDOW_AFTER)
        warned = result.warnings
        print(
            f"| {result.fault.label} | {result.served:,} | {result.hits:,} "
            f"| {max(0, result.served - result.hits):,} | {max(0, result.hits - result.served):,} "
            f"| {after} | {result.p99():.1f} ms | "
            f"{window if result.fault.apply else float('nan'):.1f} ms | "
            f"{warned['Metrics writes are waiting']}/{warned['Metrics writes resumed']}/"
            f"{warned['Metrics buffer full']} |"
        )
        if result.failed:
            print(f"|   ({result.failed} requests got no 200) | | | | | | | | |")
    for result in results:
        resumed = result.resumed()
        if result.fault.failover and resumed is not None:
            agreed = result.answered_at - result.fault_at
            who = "sentinels" if result.fault.sentinel else "nodes"
            print(
                f"\n{result.fault.label}: the {who} agreed on the new master {agreed:.2f} s "
                f"after the fault; recording resumed {resumed - result.fault_at:.2f} s after "
                f"it ({resumed - result.answered_at:.3f} s after they agreed); goal for a "
                f"kill: resumed <= node timeout + 2 s = {options.node_timeout / 1000 + 2:.1f} s "
                "after it"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rate", type=float, default=300.0, help="requests per second")
    parser.add_argument("--duration", type=float, default=25.0, help="seconds of load per fault")
    parser.add_argument("--fault-at", type=float, default=10.0)
    parser.add_argument(
        "--node-timeout",
        type=int,
        default=2000,
        help="cluster-node-timeout, and Sentinel's down-after-milliseconds (ms)",
    )
    parser.add_argument(
        "--only", default="", help=f"comma-separated faults: {','.join(f.key for f in FAULTS)}"
    )
    options = parser.parse_args()
    chosen = [f for f in FAULTS if not options.only or f.key in options.only.split(",")]

    settings.configure(
        INSTALLED_APPS=["django_redis_metrics"],
        USE_TZ=True,
        DJANGO_REDIS_METRICS={},
    )
    django.setup()
    workdir = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench-faults-{os.getpid()}"
    workdir.mkdir(parents=True, exist_ok=True)
    results = []
    for fault in chosen:
        started = time.monotonic()
        results.append(run(fault, options, workdir))
        print(f"{fault.label}: done in {time.monotonic() - started:.0f} s", flush=True)
    print_table(results, options)
    print(f"\n(gunicorn logs in {workdir})")
    served = sum(r.served for r in results)
    print(
        f"median p99 over runs: {statistics.median(r.p99() for r in results):.1f} ms; "
        f"{served:,} requests in all"
    )


if __name__ == "__main__":
    main()
