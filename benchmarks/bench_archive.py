"""The archive (#21): what a pass costs per metric, what a 5-year chart costs to read, and what
a counter-year takes in PostgreSQL beside what Redis would need to hold it.

    python benchmarks/bench_archive.py [--counters 10000] [--statistics 1000]
        [--history-counters 20] [--years 5]

On a private redis-server and a database of its own on the PostgreSQL at
``DRM_POSTGRES_HOST:DRM_POSTGRES_PORT`` (default 127.0.0.1:5432, user postgres; created and
dropped by the run; without a server the passes run on a SQLite file and the PostgreSQL figures
are skipped, saying so):

1. The past: ``--history-counters`` counters get ``--years`` of hourly and daily rows written
   straight into the archive (COPY), as years of passes would have left them.
2. The present: ``--counters`` counters and ``--statistics`` statistics (default precisions and
   samples) written over the last three closed hours in Redis.
3. A first pass (everything Redis holds: one HGETALL per series and precision), then a steady
   pass an hour later (one new hourly slice each, plus the one-slice overlap), each timed per
   metric; the baseline is the cleaner's pass over the same metrics in the same run
   (``clean_counters`` + ``clean_statistics``): what ``clean_metrics`` already spends per pass.
4. ``Counter.history(86400, 5 years)`` of a counter with full history (best of 20), against
   ``Counter.series(86400)`` (Redis's 120 days) in the same run.
5. ``pg_total_relation_size`` of the slice table (rows and indexes) per row, times the rows of
   a counter-year (8,760 hourly + 365 daily), against ``MEMORY USAGE`` of a Redis hash holding
   that many ``start -> count`` fields.
"""

from __future__ import annotations

import argparse
import io
import os
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import best_of, configure

HOUR, DAY, YEAR = 3600, 86400, 365 * 86400
PG_HOST = os.environ.get("DRM_POSTGRES_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("DRM_POSTGRES_PORT", "5432"))
PG_USER = os.environ.get("DRM_POSTGRES_USER", "postgres")


def postgres_answers() -> bool:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return False
    try:
        socket.create_connection((PG_HOST, PG_PORT), timeout=0.5).close()
    except OSError:
        return False
    return True


def admin_sql(sql: str) -> None:
    import psycopg

    with psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, autocommit=True) as db:
        db.execute(sql)  # type: ignore[arg-type]


def migrate() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def write_past(names: list[str], years: int, until: int, postgres: bool) -> int:
    """``years`` of hourly and daily archived slices of each of ``names``, up to ``until``."""
    from django.db import connection

    from django_redis_metrics.models import ArchivedSlice

    table = ArchivedSlice._meta.db_table
    columns = "kind, series, metric, precision, start, count"
    rows = 0
    for name in names:
        buffer = io.StringIO()
        for precision in (HOUR, DAY):
            last = until - until % precision - precision
            first = last - years * YEAR
            for start in range(first - first % precision, last + 1, precision):
                buffer.write(f"counter\t{name}\t{name}\t{precision}\t{start}\t{start % 97}\n")
                rows += 1
        if postgres:
            with (
                connection.cursor() as cursor,
                cursor.copy(  # type: ignore[attr-defined]
                    f"COPY {table} ({columns}) FROM STDIN"
                ) as copy,
            ):
                copy.write(buffer.getvalue())
        else:
            values = [line.split("\t") for line in buffer.getvalue().splitlines()]
            ArchivedSlice.objects.bulk_create(
                [
                    ArchivedSlice(
                        kind=k, series=s, metric=m, precision=int(p), start=int(t), count=int(c)
                    )
                    for k, s, m, p, t, c in values
                ],
                batch_size=5000,
            )
    return rows


def write_present(counters: int, statistics: int, hour: int) -> None:
    """Counters and statistics written over the three closed hours before ``hour``."""
    from django_redis_metrics import Batch, Counter, Statistic, get_redis_connection

    client = get_redis_connection()
    for first in range(0, max(counters, statistics), 500):
        with Batch(client) as batch:
            for index in range(first, min(first + 500, counters)):
                for ago in (3, 2, 1):
                    Counter(f"c{index:05}").incr(index % 7 + 1, hour - ago * HOUR + 60, batch=batch)
            for index in range(first, min(first + 500, statistics)):
                for ago in (3, 2, 1):
                    for value in (12.5, 40.0, 3.25):
                        Statistic(f"s{index:05}").record(
                            value * (index % 5 + 1), hour - ago * HOUR + 60, batch=batch
                        )


def timed_pass(now: float) -> tuple[float, int]:
    from django_redis_metrics.archive.passes import archive_all

    started = time.perf_counter()
    reports = archive_all(now=now, kinds=["counter", "statistic"])
    return time.perf_counter() - started, sum(report.rows for report in reports)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counters", type=int, default=10_000)
    parser.add_argument("--statistics", type=int, default=1_000)
    parser.add_argument("--history-counters", type=int, default=20)
    parser.add_argument("--years", type=int, default=5)
    args = parser.parse_args()

    postgres = postgres_answers()
    name = f"drm_bench_{os.getpid()}"
    if postgres:
        admin_sql(f"CREATE DATABASE {name}")
        database: dict[str, Any] = {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": PG_HOST,
            "PORT": PG_PORT,
            "USER": PG_USER,
            "NAME": name,
        }
    else:
        print(
            f"No PostgreSQL answers at {PG_HOST}:{PG_PORT} (or psycopg is missing): the passes "
            "run on a SQLite file; the chart and size figures (PostgreSQL's) are skipped."
        )
        path = Path(tempfile.mkdtemp(prefix="drm-bench-")) / "archive.sqlite3"
        database = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path)}
    from django_redis_metrics.testing import RedisServer

    server = RedisServer().start()
    try:
        configure(
            server.url, "bench", databases={"default": database}, ARCHIVE_PRECISIONS=(HOUR, DAY)
        )
        migrate()
        run(args, postgres, server)
    finally:
        server.stop()
        if postgres:
            from django.db import connections

            connections.close_all()
            admin_sql(f"DROP DATABASE {name}")


def run(args: argparse.Namespace, postgres: bool, server: Any) -> None:
    from django.db import connection

    from django_redis_metrics import Counter, get_redis_connection
    from django_redis_metrics.cleanup import clean_all
    from django_redis_metrics.models import ArchivedSlice

    now = time.time()
    hour = int(now - now % HOUR)
    history = [f"h{index:03}" for index in range(args.history_counters)]
    started = time.perf_counter()
    past = write_past(history, args.years, hour, postgres)
    print(
        f"past: {past:,} archived rows of {len(history)} counters ({args.years} years, hourly "
        f"and daily) written in {time.perf_counter() - started:.1f} s"
    )
    started = time.perf_counter()
    write_present(args.counters, args.statistics, hour)
    metrics = args.counters + args.statistics
    print(
        f"present: {args.counters:,} counters and {args.statistics:,} statistics written in "
        f"Redis in {time.perf_counter() - started:.1f} s"
    )

    first, rows = timed_pass(hour - HOUR + 1)
    print(
        f"first pass (all Redis holds): {first * 1000 / metrics:.3f} ms per metric, {rows:,} rows"
    )
    steady, rows = timed_pass(hour + 1)
    started = time.perf_counter()
    clean_all(kinds=["counter", "statistic"], now=hour + 1)
    cleaning = time.perf_counter() - started
    print(
        f"steady pass (one new hourly slice each, {rows:,} rows): "
        f"{steady * 1000 / metrics:.3f} ms per metric (goal <= 0.5); the cleaner's pass "
        f"over the same metrics: {cleaning * 1000 / metrics:.3f} ms per metric; "
        f"ratio {steady / cleaning:.2f}"
    )
    idle, rows = timed_pass(hour + 2)
    print(f"a pass with no new slice closed: {idle * 1000:.2f} ms in all ({rows} rows)")

    if not postgres:
        print("chart and size: skipped (PostgreSQL does not answer)")
        return
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    counter = Counter(history[0])
    counter.incr(1, when=hour - 60)
    span = (hour - args.years * YEAR, hour)
    chart = best_of(20, lambda: counter.history(DAY, *span))
    redis_only = best_of(20, lambda: counter.series(DAY))
    print(
        f"{args.years}-year daily chart, Counter.history(86400): {chart * 1000:.2f} ms "
        f"(goal <= 50) for {len(counter.history(DAY, *span)):,} slices; Redis's own 120 days, "
        f"Counter.series(86400): {redis_only * 1000:.2f} ms; ratio {chart / redis_only:.1f}"
    )

    table = ArchivedSlice._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_total_relation_size('{table}'), count(*) FROM {table}")
        size, count = cursor.fetchone()
    per_row = size / count
    per_year = (YEAR // HOUR) + 365
    client = get_redis_connection()
    key = "bench:size:{h}:3600"
    start = hour - per_year * HOUR
    pipe = client.pipeline(transaction=False)
    for offset in range(0, per_year, 1000):
        part = range(offset, min(offset + 1000, per_year))
        fields = {str(start + i * HOUR): i % 97 for i in part}
        pipe.hset(key, mapping=fields)
    pipe.execute()
    redis_bytes = int(client.memory_usage(key, samples=0))
    fields = client.hlen(key)
    print(
        f"size: {per_row:.0f} bytes per archived row in PostgreSQL (table and indexes, "
        f"{count:,} rows); a counter-year ({per_year:,} rows: hourly and daily) "
        f"{per_row * per_year / 1024:.0f} KiB; Redis would hold those {fields:,} fields in "
        f"{redis_bytes / 1024:.0f} KiB of RAM (MEMORY USAGE); ratio "
        f"{per_row * per_year / redis_bytes:.2f} (disk against RAM)"
    )


if __name__ == "__main__":
    sys.exit(main())
