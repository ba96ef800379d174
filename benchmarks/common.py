"""Shared plumbing for the benchmarks: Django settings on a private redis-server, timing, and
redis-benchmark's own figure on the same server in the same run."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import django
from django.conf import settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django_redis_metrics.testing import RedisServer


def start(prefix: str = "bench") -> RedisServer:
    """A private redis-server with Django configured to use it."""
    server = RedisServer().start()
    if not settings.configured:
        settings.configure(
            INSTALLED_APPS=["django_redis_metrics"],
            USE_TZ=True,
            TIME_ZONE="UTC",
            DJANGO_REDIS_METRICS={"CONNECTION": server.url, "PREFIX": prefix},
        )
        django.setup()
    else:
        settings.DJANGO_REDIS_METRICS = {"CONNECTION": server.url, "PREFIX": prefix}
    return server


def redis_benchmark_rate(
    server: RedisServer, *command: str, requests: int = 2_000_000, pipeline: int = 100
) -> float:
    """Requests per second redis-benchmark reaches for ``command``, pipelined, on ``server``."""
    binary = shutil.which("redis-benchmark")
    if not binary:
        raise SystemExit(
            "redis-benchmark is needed for the baseline (apt-get install redis-tools)."
        )
    output = subprocess.run(
        [
            binary,
            "-h",
            "127.0.0.1",
            "-p",
            str(server.port),
            "-P",
            str(pipeline),
            "-n",
            str(requests),
            "-r",
            "100000",
            "-q",
            *command,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    match = re.findall(r"([\d.]+) requests per second", output.replace("\r", "\n"))
    if not match:
        raise RuntimeError(f"Unexpected redis-benchmark output: {output!r}")
    return float(match[-1])


def best_of(repeats: int, action: Callable[[], object]) -> float:
    """The fastest of ``repeats`` runs, in seconds."""
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - started)
    return best
