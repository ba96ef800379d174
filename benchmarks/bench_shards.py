"""One hot counter on a Redis Cluster: increments per second with 1 shard and with 3
(``Counter(name, shards=3)``), on a private 3-master cluster, several client processes, in the
same run.

    python benchmarks/bench_shards.py [--processes 4] [--seconds 5] [--batch 50] [--shards 1,3]

Each process writes the counter in a loop, ``--batch`` increments per ``Batch`` (one pipeline
per node: what the sender sends for many requests) or one ``incr()`` per round trip with
``--batch 1``, for ``--seconds``. Printed per shard count: increments per second (all processes
together), the ratio against 1 shard, and each master's CPU time per increment (``INFO cpu``,
its main thread): ``1 / (CPU per increment)`` is what one node could take, busy with nothing
else; the busiest node's share shows how evenly the shards spread. The counter's lifetime total
is checked against the increments sent: exact. The servers and the clients share the machine's
cores (say how many beside a figure): on a small machine the clients, not Redis, set the pace,
and the per-node CPU figure is the one to scale from.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from typing import Any

from common import configure

T_NAME = "hot"


def node_cpu(cluster: Any) -> list[float]:
    """Main-thread CPU seconds of every master."""
    seconds = []
    for server in cluster.masters:
        info = server.client().info("cpu")
        seconds.append(
            float(info["used_cpu_user_main_thread"]) + float(info["used_cpu_sys_main_thread"])
        )
    return seconds


def writer(name: str, shards: int, seconds: float, batch: int, sent: Any) -> None:
    """Increment the counter until ``seconds`` pass; add the increments sent to ``sent``."""
    from django_redis_metrics import Batch, Counter

    counter = Counter(name, precisions=[1, 60, 3600], shards=shards)
    count = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if batch == 1:
            counter.incr()
            count += 1
            continue
        with Batch() as pending:
            for _ in range(batch):
                counter.incr(batch=pending)
        count += batch
    with sent.get_lock():
        sent.value += count


def run(shards: int, options: argparse.Namespace, cluster: Any) -> dict[str, Any]:
    from django_redis_metrics import Counter

    name = f"{T_NAME}-{shards}"
    counter = Counter(name, precisions=[1, 60, 3600], shards=shards)
    for _ in range(3 * shards):
        counter.incr()  # scripts loaded, shards listed
    warm = counter.lifetime_total()
    context = multiprocessing.get_context("fork")
    sent = context.Value("q", 0)
    before = node_cpu(cluster)
    started = time.perf_counter()
    workers = [
        context.Process(target=writer, args=(name, shards, options.seconds, options.batch, sent))
        for _ in range(options.processes)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    used = [after - then for after, then in zip(node_cpu(cluster), before, strict=True)]
    total = counter.lifetime_total() - warm
    if total != sent.value:
        raise AssertionError(f"{sent.value} increments sent, {total} counted")
    return {"rate": total / elapsed, "total": total, "cpu": used}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--batch", type=int, default=50)
    parser.add_argument("--shards", default="1,3")
    options = parser.parse_args()
    from django_redis_metrics.testing import RedisClusterServers

    cluster = RedisClusterServers(masters=3).start()
    try:
        configure(cluster.url, "bench-shards", CLUSTER=True)
        cores = os.cpu_count()
        print(
            f"{options.processes} client processes, {options.seconds:g} s each, "
            f"{'one incr() a round trip' if options.batch == 1 else f'{options.batch} a Batch'}"
            f"; a 3-master cluster; {cores} cores shared by the clients and the servers"
        )
        base = None
        for shards in [int(part) for part in options.shards.split(",")]:
            found = run(shards, options, cluster)
            base = base or found["rate"]
            per_inc = [seconds / found["total"] * 1e6 for seconds in found["cpu"]]
            busiest = max(found["cpu"]) / max(sum(found["cpu"]), 1e-9)
            print(
                f"shards={shards}: {found['rate']:10,.0f} increments/s (exact: "
                f"{found['total']:,} counted), ratio {found['rate'] / base:5.2f} against 1 shard"
            )
            print(
                "          CPU per increment by master: "
                + ", ".join(f"{us:5.2f} µs" for us in per_inc)
                + f"; busiest master {busiest:.0%} of the servers' CPU; one master alone "
                f"could take {1e6 / max(sum(per_inc), 1e-9):,.0f} increments/s",
                flush=True,
            )
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
