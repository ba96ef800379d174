"""Shared plumbing for the benchmarks: Django settings on a private redis-server, timing,
redis-benchmark's own figure on the same server in the same run, and the same scenario run by
an earlier version of the package (a baseline from git) against that same server.

Nothing here imports the package at import time, so a baseline worker can put the earlier
version first on ``sys.path`` before anything loads it.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import django
from django.conf import settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

if TYPE_CHECKING:
    from django_redis_metrics.testing import RedisServer

#: main just before write-time retention (issue 10): what "today" means in the benchmarks.
BASELINE_REF = "1cb4648"


def configure(
    url: str, prefix: str, *, databases: dict[str, Any] | None = None, **extra: Any
) -> None:
    """Django settings pointing the package at ``url`` under ``prefix`` (and, the first time,
    at ``databases``: the archive's benchmarks need one)."""
    value = {"CONNECTION": url, "PREFIX": prefix, **extra}
    if not settings.configured:
        settings.configure(
            **({} if databases is None else {"DATABASES": databases}),
            INSTALLED_APPS=[
                "django.contrib.contenttypes",
                "django.contrib.auth",
                "django_redis_metrics",
            ],
            USE_TZ=True,
            TIME_ZONE="UTC",
            DJANGO_REDIS_METRICS=value,
        )
        django.setup()
    else:
        settings.DJANGO_REDIS_METRICS = value


#: The Django apps an admin page needs, with this package's.
ADMIN_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django_redis_metrics",
]


def configure_admin_site(**extra: Any) -> None:
    """Django set up to render the admin's pages in this process: the admin's apps, UTC, an
    in-memory database; ``extra`` settings added (``ROOT_URLCONF``, ``TEMPLATES``...)."""
    settings.configure(
        INSTALLED_APPS=ADMIN_APPS,
        USE_TZ=True,
        TIME_ZONE="UTC",
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
        **extra,
    )
    django.setup()


def start(prefix: str = "bench") -> RedisServer:
    """A private redis-server with Django configured to use it."""
    from django_redis_metrics.testing import RedisServer

    server = RedisServer().start()
    configure(server.url, prefix)
    return server


def baseline_tree(ref: str = BASELINE_REF) -> Path:
    """The package as it was at ``ref``, extracted from git into a temporary directory."""
    target = Path(tempfile.mkdtemp(prefix=f"drm-baseline-{ref}-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "django_redis_metrics"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def run_worker(script: Path, tree: Path, *args: str) -> Any:
    """Run ``script --worker <tree> args...`` in a subprocess; its last line of output is JSON."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    result = subprocess.run(
        [sys.executable, str(script), "--worker", str(tree), *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if result.returncode:
        raise RuntimeError(f"baseline worker failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def use_tree(tree: str) -> None:
    """In a worker: load the package from ``tree`` (an earlier version), not this checkout."""
    sys.path.insert(0, tree)
    import django_redis_metrics

    loaded = Path(django_redis_metrics.__file__).resolve()
    if not loaded.is_relative_to(Path(tree).resolve()):
        raise RuntimeError(f"the baseline worker loaded {loaded}, not the tree {tree}")


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


def once_a_second(names: list[Any], seconds: int, write: Callable[[Any], object]) -> float:
    """``write(name)`` for every one of ``names`` once a second for ``seconds`` seconds, each
    second's writes starting just after the clock's second begins (so each write to a metric
    with a 1 s precision opens its slice); the time spent writing, sleeps left out."""
    active = 0.0
    for _ in range(seconds):
        now = time.time()
        time.sleep(math.ceil(now) - now + 0.01)
        started = time.perf_counter()
        for name in names:
            write(name)
        active += time.perf_counter() - started
    return active
