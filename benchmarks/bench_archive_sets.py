"""The archive of unique bitmaps, estimates and event series: what a pass costs per metric,
what reads of archived history cost beside the same reads from Redis, and what a bitmap-year
takes in the database.

Starts its own private redis-server, and archives into PostgreSQL where one answers
(``DRM_POSTGRES_HOST``/``DRM_POSTGRES_PORT``, default 127.0.0.1:5432, user ``postgres``: a
database of its own, created and dropped by the run), else into a SQLite file. Figures:

- a first pass and a steady pass (one more day closed) over ``--bitmaps`` bitmaps (plus a tenth
  as many estimates and event series) with realistic ids (a site's users, the recent ones
  most active), in milliseconds per metric (goal: 0.5 ms a metric for a steady pass);
- a 5-year monthly ``history()`` read from the archive, beside the same read while Redis
  still holds the 60 months (same run, same data);
- a union of 52 archived weeks (``between().count()``), beside the same union from Redis;
- archive bytes per bitmap-year (compressed bits of weeks and months, rows of days).

    python benchmarks/bench_archive_sets.py              # 1,000 bitmaps
    python benchmarks/bench_archive_sets.py --bitmaps 200
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from django.conf import settings

from benchmarks.common import best_of, configure

DAY = 86400
#: The site's users: ids up to this (2.5 KB a bitmap key at most).
USERS = 20_000


def database() -> tuple[dict[str, Any], str, Any]:
    """The DATABASES entry, what it is, and how to drop it after."""
    host = os.environ.get("DRM_POSTGRES_HOST", "127.0.0.1")
    port = int(os.environ.get("DRM_POSTGRES_PORT", "5432"))
    user = os.environ.get("DRM_POSTGRES_USER", "postgres")
    name = f"drm_bench_{uuid.uuid4().hex[:8]}"
    try:
        import psycopg

        with psycopg.connect(
            host=host, port=port, user=user, dbname="postgres", autocommit=True
        ) as c:
            c.execute(f'CREATE DATABASE "{name}"')

        def drop() -> None:
            from django.db import connections

            connections.close_all()
            with psycopg.connect(
                host=host, port=port, user=user, dbname="postgres", autocommit=True
            ) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}"')

        entry = {"ENGINE": "django.db.backends.postgresql", "NAME": name, "HOST": host}
        entry |= {"PORT": port, "USER": user}
        return entry, f"PostgreSQL {host}:{port}", drop
    except Exception as exc:  # no server: a SQLite file
        path = Path(f"/tmp/{name}.sqlite3")
        print(f"(no PostgreSQL: {exc.__class__.__name__}; archiving into SQLite {path})")
        return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(path)}, "SQLite", path.unlink


def users(rng: random.Random, count: int) -> list[int]:
    """``count`` distinct active users: the recent ones (high ids) most active."""
    found: set[int] = set()
    while len(found) < count:
        found.add(int(USERS * rng.random() ** 0.5))
    return sorted(found)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bitmaps", type=int, default=1000)
    parser.add_argument("--days", type=int, default=14, help="days of marks per bitmap")
    parser.add_argument("--daily", type=int, default=60, help="users a bitmap marks a day")
    options = parser.parse_args()

    from django_redis_metrics.testing import RedisServer

    entry, where, drop = database()
    server = RedisServer().start()
    configure(server.url, "bench", databases={"default": entry})
    try:
        from django.core.management import call_command

        call_command("migrate", "django_redis_metrics", verbosity=0)
        run(options, where)
    finally:
        server.stop()
        drop()


def run(options: argparse.Namespace, where: str) -> None:
    from django.db import connection

    from django_redis_metrics import EventSeries, UniqueBitmap, UniqueEstimate
    from django_redis_metrics.archive.passes import archive_all
    from django_redis_metrics.core.periods import Day, Month, Week
    from django_redis_metrics.models import ArchivedPeriod

    rng = random.Random(21)
    now = time.time()
    today = Day.containing(now)
    metrics = options.bitmaps + 2 * (options.bitmaps // 10)
    print(f"archive into {where}; {options.bitmaps:,} bitmaps, {options.bitmaps // 10:,} "
          f"estimates and event series, {options.days} days of marks")  # fmt: skip

    started = time.perf_counter()
    bitmaps = [UniqueBitmap(f"b{i}") for i in range(options.bitmaps)]
    for bitmap in bitmaps:
        marks = [
            (user, day.start_ts + rng.uniform(0, DAY - 1))
            for back in range(options.days, 0, -1)
            for day in [today.shift(-back)]
            for user in users(rng, options.daily)
        ]
        bitmap.mark_many(marks)
    extra = options.bitmaps // 10
    for i in range(extra):
        estimate = UniqueEstimate(f"e{i}")
        series = EventSeries(f"s{i}", index=["type"])
        for back in range(options.days, 0, -1):
            day = today.shift(-back)
            for user in users(rng, options.daily):
                estimate.add(f"visitor-{user}", day.start_ts + rng.uniform(0, DAY - 1))
            series.record_many(
                [
                    {"when": day.start_ts + rng.uniform(0, DAY - 1), "type": rng.choice("abcd")}
                    for _ in range(options.daily)
                ]
            )
    # (Before the first pass: a pass archives what closed since the last, not backfills.)
    # A bitmap with 5 years of months, 2,000 users a month: Redis holds the 60 months.
    history = UniqueBitmap("history")
    month = Month.containing(now)
    for back in range(60):
        start = month.shift(-back).start_ts
        history.mark_many([(u, start + 3600) for u in users(rng, 2000)])
    begin = month.shift(-59).start_ts
    week = Week.containing(now)
    first, last = week.shift(-61), week.shift(-10)
    for back in range(10, 62):
        start = week.shift(-back).start_ts
        history.mark_many([(u, start + 7200) for u in users(rng, 500)])
    print(f"populated in {time.perf_counter() - started:.1f} s")

    # A first pass as of yesterday's end, then a steady one: today has closed (its marks added).
    first_at = today.start_ts + 1
    took = best_of(1, lambda: archive_all(now=first_at))
    print(f"first pass: {took:.2f} s, {took / metrics * 1000:.3f} ms a metric")
    for bitmap in bitmaps:
        bitmap.mark_many([(u, today.start_ts + 60) for u in users(rng, options.daily)])
    steady_at = today.end_ts + 1
    kinds = {"bitmap": options.bitmaps + 1, "estimate": extra, "events": extra}
    spent = {
        kind: best_of(1, lambda k=kind: archive_all(now=steady_at, kinds=[k])) for kind in kinds
    }
    steady = sum(spent.values())
    print(
        f"steady pass (one day closed): {steady * 1000:.0f} ms, "
        f"{steady / metrics * 1000:.3f} ms a metric (goal 0.5 ms): "
        + ", ".join(f"{k} {spent[k] / n * 1000:.3f} ms" for k, n in kinds.items())
    )
    baseline = best_of(3, lambda: [b.count("day", today.start_ts) for b in bitmaps[:200]]) / 200
    print(f"(baseline: one bitmap's count() from Redis, {baseline * 1000:.3f} ms)")

    from_redis = best_of(5, lambda: history.history("month", begin, now))
    union_redis = best_of(5, lambda: history.between(first.start_ts, last.end_ts - 1).count())

    def both() -> tuple[Any, int]:
        return history.history("month", begin, now), history.between(
            first.start_ts, last.end_ts - 1
        ).count()

    expected = both()
    archive_all(now=now)
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "BITMAP_RETENTION": {"day": 2, "week": 2, "month": 1},
    }
    from_archive = best_of(5, lambda: history.history("month", begin, now))
    union_archive = best_of(5, lambda: history.between(first.start_ts, last.end_ts - 1).count())
    assert both() == expected, "the archive answers what Redis answered"
    print(
        f"5-year monthly history: archive {from_archive * 1000:.2f} ms, Redis "
        f"{from_redis * 1000:.2f} ms (ratio {from_archive / from_redis:.2f})"
    )
    print(
        f"union of 52 weeks: archive {union_archive * 1000:.2f} ms, Redis "
        f"{union_redis * 1000:.2f} ms (ratio {union_archive / union_redis:.2f})"
    )

    # Bytes per bitmap-year: compressed bits of its weeks and months, one row per period.
    rows = ArchivedPeriod.objects.filter(kind="bitmap")
    weeks = rows.filter(period="week", series__startswith="b").values_list("data", flat=True)
    months = rows.filter(period="month", series="history").values_list("data", flat=True)
    weekly, monthly = ([bytes(d) for d in found if d] for found in (weeks, months))
    mean_week = sum(map(len, weekly)) / max(len(weekly), 1)
    mean_month = sum(map(len, monthly)) / max(len(monthly), 1)
    row_bytes = 0.0
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_total_relation_size('django_redis_metrics_archivedperiod')")
            row_bytes = cursor.fetchone()[0] / max(ArchivedPeriod.objects.count(), 1)
    year = 52 * mean_week + 12 * mean_month
    print(
        f"bitmap-year: bits {year / 1024:.1f} KB (a week of {7 * options.daily} marks "
        f"{mean_week:.0f} B, a month of 2,000 users {mean_month:.0f} B, compressed), "
        f"{365 + 52 + 12} rows"
        + (f", {row_bytes:.0f} B a row in PostgreSQL (indexes included)" if row_bytes else "")
    )


if __name__ == "__main__":
    main()
