"""Spool's scenario (seed 002) for UniqueBitmap: 128M users, 30 daily bitmaps, ~25% of bits set.

Starts its own private redis-server, populates it, and times the count of a day, an ISO week, a
month and an arbitrary 30-day range, beside Spool's published figures and beside a naive
``BITOP OR`` of the 30 day keys + ``BITCOUNT`` and a raw ``BITCOUNT`` run on the same server.

Population (fast, and exactly what the write path would have produced): each day key is
``BITOP AND`` of two keys of random bytes (SET), so each bit is set with probability 1/4; the
ISO week and month keys are then ``BITOP OR`` of their days, which is what write-time fan-out of
``mark`` produces. Days run from 2026-10-20 (a Tuesday) to 2026-11-18, so the 30-day range is
"arbitrary": it is covered by 3 ISO week keys and 9 day keys (12 keys instead of 30).

    python benchmarks/bench_bitmaps.py               # quick: 16M users (2 MB per bitmap)
    python benchmarks/bench_bitmaps.py --users 128000000 --repeat 7   # Spool's size
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django
from django.conf import settings

SPOOL_MS = {"day": 50.2, "week": 392.0, "month": 1624.8}
FIRST_DAY = date(2026, 10, 20)


def timed(action: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of ``action`` in ms (one untimed warm-up call first), and its result."""
    result = action()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = action()
        samples.append((time.perf_counter() - started) * 1000)
    return statistics.median(samples), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=16_000_000, help="bits per bitmap")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs per figure (median)")
    options = parser.parse_args()

    from django_redis_metrics.testing import RedisServer

    server = RedisServer().start()
    try:
        settings.configure(
            USE_TZ=True,
            TIME_ZONE="UTC",
            DJANGO_REDIS_METRICS={
                "CONNECTION": server.url,
                "PREFIX": "bench",
                "TIME_ZONE": "UTC",
                "SOCKET_TIMEOUT": 120.0,
            },
        )
        django.setup()
        run(server, options)
    finally:
        server.stop()


def populate(client: Any, bitmap: Any, days: list[Any], size: int) -> float:
    from django_redis_metrics.core.periods import Month, Week

    started = time.perf_counter()
    rng = random.Random(2011)
    for day in days:
        client.set("bench:tmp:a", rng.randbytes(size))
        client.set("bench:tmp:b", rng.randbytes(size))
        client.bitop("AND", bitmap.key(day), "bench:tmp:a", "bench:tmp:b")
    client.delete("bench:tmp:a", "bench:tmp:b")
    for cls in (Week, Month):
        groups: dict[Any, list[str]] = {}
        for day in days:
            groups.setdefault(cls.containing(day.start_ts), []).append(bitmap.key(day))
        for period, keys in groups.items():
            client.bitop("OR", bitmap.key(period), *keys)
    return time.perf_counter() - started


def run(server: Any, options: argparse.Namespace) -> None:
    from django_redis_metrics import UniqueBitmap, get_redis_connection
    from django_redis_metrics.bitmaps.unite import copy_bitmap as _copy_bitmap
    from django_redis_metrics.core.periods import Day, Month, Week

    client = get_redis_connection()
    size = options.users // 8
    active = UniqueBitmap("active")
    days = [
        Day.containing(datetime.combine(FIRST_DAY + timedelta(days=i), datetime.min.time(), UTC))
        for i in range(options.days)
    ]
    seconds = populate(client, active, days, size)
    print(
        f"users: {options.users:,}  ({size / 2**20:.1f} MB per bitmap), {options.days} days "
        f"{days[0]} .. {days[-1]}, populated in {seconds:.1f} s"
    )

    day, repeat = days[len(days) // 2], options.repeat
    week = Week.containing(day.start_ts)
    month = Month.containing(day.start_ts)
    first, last = days[0].start_ts, days[-1].start_ts
    day_keys = [active.key(d) for d in days]

    raw_ms, raw_count = timed(lambda: client.bitcount(active.key(day)), repeat)
    day_ms, day_count = timed(lambda: active.count("day", day.start_ts), repeat)
    week_ms, _ = timed(lambda: active.count("week", week.start_ts), repeat)
    month_ms, _ = timed(lambda: active.count("month", month.start_ts), repeat)

    def naive() -> int:
        client.bitop("OR", "bench:naive", *day_keys)
        result = int(client.bitcount("bench:naive"))
        client.delete("bench:naive")
        return result

    naive_ms, naive_count = timed(naive, repeat)
    cover = active._cover(days)
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "BITMAP_CACHE_TTL": 0}
    range_ms, range_count = timed(lambda: active.between(first, last).count(), repeat)
    days_only = UniqueBitmap("active", periods=("day",))
    chunked_ms, chunked_count = timed(lambda: days_only.between(first, last).count(), repeat)
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "BITMAP_CACHE_TTL": 86400}
    cached_ms, cached_count = timed(lambda: active.between(first, last).count(), repeat)
    assert raw_count == day_count
    assert naive_count == range_count == chunked_count == cached_count, (
        naive_count,
        range_count,
        chunked_count,
        cached_count,
    )

    # What a cohort across two bitmaps on Redis Cluster pays per foreign operand: a copy into
    # the other bitmap's slot through the client (GET + SET PX for a dense operand, as the
    # library does; DUMP/RESTORE shown for comparison: its compression attempt costs more).
    def copy() -> None:
        _copy_bitmap(client, active.key(day), "bench:copy", sparse=False)
        client.delete("bench:copy")

    def dump_restore() -> None:
        _copy_bitmap(client, active.key(day), "bench:copy", sparse=True)
        client.delete("bench:copy")

    copy_ms, _ = timed(copy, repeat)
    dump_ms, _ = timed(dump_restore, repeat)
    payload_mb = len(client.dump(active.key(day))) / 2**20
    premium = UniqueBitmap("premium", periods=("month",))
    client.set(premium.key(month), random.Random(7).randbytes(size))
    cohort_ms, cohort_count = timed(
        lambda: (active.between(first, last) & premium.query("month", month.start_ts)).count(),
        repeat,
    )

    memory = {
        name: int(client.memory_usage(active.key(p)) or 0) / 2**20
        for name, p in (("day", day), ("week", week), ("month", month))
    }
    used = int(client.info("memory")["used_memory"]) / 2**20

    print(
        f"\nmedian of {repeat} runs, ms; {len(cover)} keys cover the 30-day range "
        f"({', '.join(sorted({p.name for p in cover}))})\n"
    )
    rows = [
        ("raw BITCOUNT of one day key", raw_ms, None, ""),
        ("count('day')", day_ms, SPOOL_MS["day"], f"{day_ms / raw_ms:.2f}x raw BITCOUNT"),
        ("count('week')  (fan-out key)", week_ms, SPOOL_MS["week"], ""),
        ("count('month') (fan-out key)", month_ms, SPOOL_MS["month"], ""),
        ("naive BITOP OR of 30 day keys + BITCOUNT", naive_ms, None, ""),
        (
            f"30-day range, {len(cover)}-key cover, not cached",
            range_ms,
            None,
            f"{range_ms / naive_ms:.2f}x naive",
        ),
        (
            "30-day range, 30 day keys in chunks of 16",
            chunked_ms,
            None,
            f"{chunked_ms / naive_ms:.2f}x naive",
        ),
        (
            "30-day range, cached union (periods over)",
            cached_ms,
            None,
            f"{cached_ms / naive_ms:.2f}x naive",
        ),
        ("cohort: 30-day range & premium month", cohort_ms, None, f"{cohort_count:,} users"),
        ("cluster cross-slot copy of a day (GET+SET PX)", copy_ms, None, ""),
        ("  same by DUMP+RESTORE", dump_ms, None, f"payload {payload_mb:.1f} MB"),
    ]
    print(f"{'figure':<48}{'ours':>10}{'Spool':>10}  note")
    for label, ours, spool, note in rows:
        spool_text = f"{spool:.1f}" if spool is not None else "-"
        print(f"{label:<48}{ours:>10.1f}{spool_text:>10}  {note}")
    print(f"\nusers in the range: {range_count:,}; in the day: {day_count:,}")
    print(
        "MEMORY USAGE per bitmap: "
        + ", ".join(f"{k} {v:.1f} MB" for k, v in memory.items())
        + f"; used_memory {used:.0f} MB for {len(days)} days + weeks + months"
    )


if __name__ == "__main__":
    main()
