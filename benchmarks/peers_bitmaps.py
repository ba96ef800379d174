"""bench_peers.py's bitmap figures: UniqueBitmap against bitmapist 3.119 on the same marks.

Eight ISO weeks of marks (``--marks-per-day`` a day, user ids below ``--users``) are loaded in
bulk by both (bitmapist's ``mark_event`` queued on a non-transactional pipeline, sent every
1,000 marks; our ``mark_many``), then read back: every day's count, the union of the last 30
days, and the 8-week retention table, each checked against Python sets first.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections import defaultdict
from datetime import UTC, date, datetime, timedelta
from typing import Any

from bench_peers import Row, Trips, check, interleaved, per_second, rate

PEER = "bench"  # bitmapist's name for our private server


def dataset(options: argparse.Namespace) -> tuple[list[tuple[int, float]], list[date]]:
    """Marks over the 8 ISO weeks ending with today (today's up to a minute ago)."""
    rng = random.Random(13)
    today = datetime.now(UTC).date()
    monday = today - timedelta(days=today.weekday() + 49)
    days = [monday + timedelta(days=i) for i in range((today - monday).days + 1)]
    latest = time.time() - 60
    marks = []
    for day in days:
        start = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
        end = min(start + 86400, latest)
        for _ in range(options.marks_per_day):
            marks.append((rng.randrange(options.users), rng.uniform(start, end)))
    return marks, days


def bitmaps(options: argparse.Namespace, rows: list[Row], notes: list[str]) -> None:
    import bitmapist

    from django_redis_metrics import UniqueBitmap

    marks, days = dataset(options)
    dated = [(user, datetime.fromtimestamp(ts, UTC)) for user, ts in marks]
    truth: dict[date, set[int]] = defaultdict(set)
    for user, ts in marks:
        truth[datetime.fromtimestamp(ts, UTC).date()].add(user)

    from django_redis_metrics import get_redis_connection

    client = get_redis_connection()
    cpu: dict[str, list[float]] = defaultdict(list)

    def with_cpu(name: str, action: Any) -> float:
        before = server_cpu(client)
        result = per_second(len(marks), action)
        cpu[name].append((server_cpu(client) - before) / len(marks) * 1e6)
        return result

    def peer_bulk(i: int) -> float:
        def load() -> None:
            pipe = bitmapist.get_redis(PEER).pipeline(transaction=False)
            for index, (user, when) in enumerate(dated):
                bitmapist.mark_event(f"bulk{i}", user, system=pipe, now=when, use_pipeline=False)
                if index % 1000 == 999:
                    pipe.execute()
            pipe.execute()

        return with_cpu("peer", load)

    bulk = interleaved(
        options.rounds,
        {
            "peer": peer_bulk,
            "ours": lambda i: with_cpu("ours", lambda: UniqueBitmap(f"bulk{i}").mark_many(marks)),
        },
    )
    ours = UniqueBitmap("bulk0")
    for day in days:
        theirs = len(bitmapist.DayEvents("bulk0", day.year, day.month, day.day, PEER))
        check(f"day {day}", ours.count("day", noon(day)), theirs, len(truth[day]))
    rows.append(
        (
            "**mark, pipelined bulk load**",
            f"`mark_event` on a pipeline {rate(bulk['peer'])}",
            f"`mark_many` {rate(bulk['ours'])}",
            bulk["ours"] / bulk["peer"],
        )
    )
    peer_cpu, our_cpu = statistics.median(cpu["peer"]), statistics.median(cpu["ours"])
    rows.append(
        (
            "Redis CPU per mark, bulk load (INFO cpu)",
            f"{peer_cpu:.2f} µs",
            f"{our_cpu:.2f} µs",
            our_cpu / peer_cpu,
        )
    )
    one_by_one(options, rows, notes)
    batched(options, rows)
    union(options, days, truth, rows, notes)
    cohort(options, days, truth, rows, notes)


def noon(day: date) -> float:
    return datetime(day.year, day.month, day.day, 12, tzinfo=UTC).timestamp()


def one_by_one(options: argparse.Namespace, rows: list[Row], notes: list[str]) -> None:
    """Marks one round trip each, and what each costs the server: its CPU (INFO cpu) and its
    commands' own time (INFO commandstats)."""
    import bitmapist

    from django_redis_metrics import UniqueBitmap, get_redis_connection

    client = get_redis_connection()
    n = options.one_by_one
    users = [random.Random(i).randrange(options.users) for i in range(n)]
    cpu: dict[str, list[float]] = defaultdict(list)
    busy: dict[str, list[float]] = defaultdict(list)
    commands: dict[str, dict[str, float]] = {}

    def measured(name: str, action: Any) -> float:
        client.config_resetstat()
        before = server_cpu(client)
        result = per_second(n, action)
        cpu[name].append((server_cpu(client) - before) / n * 1e6)
        stats = client.info("commandstats")
        mine = {k: v for k, v in stats.items() if v["calls"] >= n / 2}
        busy[name].append(sum(v["usec"] for v in mine.values()) / n)
        commands[name] = {k.removeprefix("cmdstat_"): v["calls"] / n for k, v in mine.items()}
        return result

    def peer(i: int) -> float:
        bitmapist.mark_event(f"one{i}", users[0], system=PEER)  # steady state: keys exist
        return measured(
            "peer", lambda: [bitmapist.mark_event(f"one{i}", u, system=PEER) for u in users]
        )

    def ours(i: int) -> float:
        bitmap = UniqueBitmap(f"one{i}")
        bitmap.mark(users[0])
        return measured("ours", lambda: [bitmap.mark(u) for u in users])

    result = interleaved(options.rounds, {"peer": peer, "ours": ours})
    today = datetime.now(UTC).date()
    theirs = len(bitmapist.DayEvents("one0", today.year, today.month, today.day, PEER))
    check("marks one by one", UniqueBitmap("one0").count("day"), theirs, len(set(users)))
    rows.append(
        (
            "**mark one by one**",
            f"`mark_event` {rate(result['peer'])}",
            f"`mark()` {rate(result['ours'])}",
            result["ours"] / result["peer"],
        )
    )
    for label, found in (("Redis CPU per mark** (INFO cpu)", cpu), ("commands", busy)):
        peer_us, our_us = min(found["peer"]), min(found["ours"])
        ratios = [o / p for p, o in zip(found["peer"], found["ours"], strict=True)]
        spread = (
            f"rounds {min(ratios):.2f}-{max(ratios):.2f}, median {statistics.median(ratios):.2f}"
        )
        if found is cpu:
            rows.append(
                (
                    f"**{label}, least of the rounds",
                    f"{peer_us:.1f} µs ({describe(commands['peer'])})",
                    f"{our_us:.1f} µs ({describe(commands['ours'])}; {spread})",
                    our_us / peer_us,
                )
            )
        else:
            rows.append(
                (
                    "Redis time of the mark's commands (commandstats), least of the rounds",
                    f"{peer_us:.2f} µs",
                    f"{our_us:.2f} µs ({spread})",
                    our_us / peer_us,
                )
            )
    notes.append(
        "Redis CPU per mark: the server's used_cpu_sys + used_cpu_user (INFO cpu) over the "
        "one-by-one marks, divided by the marks: parsing, commands and replies alike, and the "
        "kernel's side of the socket, most of it (the commands' own time is a fifth). That "
        "kernel share moves with whatever else the machine runs: on a shared 2-core machine "
        "one round's CPU per mark was 1.5-2x another's for the same side, so one round's ratio "
        "says little. The row quotes each side's least CPU over the rounds (noise only adds), "
        "with every round's ratio; the commands' own time (INFO commandstats) says what each "
        "side makes Redis do. Commands per mark from INFO commandstats (a script's own "
        "commands are counted too)."
    )


def batched(options: argparse.Namespace, rows: list[Row]) -> None:
    """Marks of 100 requests per round trip, as the sender sends them: ours on a ``Batch``
    (marks of one bitmap join one script call), bitmapist's queued on a pipeline."""
    import bitmapist

    from django_redis_metrics import Batch, UniqueBitmap, get_redis_connection

    client = get_redis_connection()
    n, size = options.one_by_one, 100
    users = [random.Random(-i).randrange(options.users) for i in range(n)]
    cpu: dict[str, list[float]] = defaultdict(list)

    def measured(name: str, action: Any) -> float:
        before = server_cpu(client)
        result = per_second(n, action)
        cpu[name].append((server_cpu(client) - before) / n * 1e6)
        return result

    def peer(i: int) -> None:
        pipe = bitmapist.get_redis(PEER).pipeline(transaction=False)
        for start in range(0, n, size):
            for user in users[start : start + size]:
                bitmapist.mark_event(f"batch{i}", user, system=pipe, use_pipeline=False)
            pipe.execute()

    for i in range(options.rounds):  # steady state: each side's first write is not timed
        UniqueBitmap(f"batch{i}").mark(users[0])
        bitmapist.mark_event(f"batch{i}", users[0], system=PEER)

    def ours(i: int) -> None:
        bitmap = UniqueBitmap(f"batch{i}")
        for start in range(0, n, size):
            with Batch() as batch:
                for user in users[start : start + size]:
                    bitmap.mark(user, batch=batch)

    result = interleaved(
        options.rounds,
        {
            "peer": lambda i: measured("peer", lambda: peer(i)),
            "ours": lambda i: measured("ours", lambda: ours(i)),
        },
    )
    today = datetime.now(UTC).date()
    theirs = len(bitmapist.DayEvents("batch0", today.year, today.month, today.day, PEER))
    check("marks in batches", UniqueBitmap("batch0").count("day"), theirs, len(set(users)))
    peer_cpu, our_cpu = statistics.median(cpu["peer"]), statistics.median(cpu["ours"])
    rows.append(
        (
            f"mark, {size} a round trip (the sender's path)",
            f"pipelined `mark_event` {rate(result['peer'])}, {peer_cpu:.2f} µs Redis CPU",
            f"`mark(batch=)` {rate(result['ours'])}, {our_cpu:.2f} µs Redis CPU",
            result["ours"] / result["peer"],
        )
    )


def server_cpu(client: Any) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_sys"]) + float(info["used_cpu_user"])


def describe(commands: dict[str, float]) -> str:
    return ", ".join(f"{name} {round(calls, 2):g}" for name, calls in sorted(commands.items()))


def union(
    options: argparse.Namespace,
    days: list[date],
    truth: dict[date, set[int]],
    rows: list[Row],
    notes: list[str],
) -> None:
    """The distinct users of the last 30 days, and the Python planning of ours alone."""
    import bitmapist
    from django.conf import settings

    from django_redis_metrics import UniqueBitmap
    from django_redis_metrics.bitmaps import query
    from django_redis_metrics.core import cover

    last30 = days[-30:]
    expected = len(set().union(*(truth[d] for d in last30)))
    ours = UniqueBitmap("bulk0")

    def peer_count() -> int:
        events = [bitmapist.DayEvents("bulk0", d.year, d.month, d.day, PEER) for d in last30]
        union = bitmapist.BitOpOr(PEER, *events)
        count = len(union)
        union.delete()
        return count

    def our_count() -> int:
        return ours.between(last30[0], last30[-1]).count()

    check("30-day union", our_count(), peer_count(), expected)
    repeat = 20

    def timed_ms(action: Any) -> float:
        started = time.perf_counter()
        for _ in range(repeat):
            action()
        return (time.perf_counter() - started) / repeat * 1000

    cached = interleaved(
        options.rounds,
        {"peer": lambda i: timed_ms(peer_count), "ours": lambda i: timed_ms(our_count)},
    )
    original = settings.DJANGO_REDIS_METRICS
    settings.DJANGO_REDIS_METRICS = {**original, "BITMAP_CACHE_TTL": 0}
    check("30-day union, not cached", our_count(), expected, expected)
    fresh = statistics.median(timed_ms(our_count) for _ in range(options.rounds))
    settings.DJANGO_REDIS_METRICS = original

    def plan() -> None:
        program = query._Program("bulk0")
        program.emit(ours.between(last30[0], last30[-1]))

    def plan_cold() -> None:
        cover.cover.cache_clear()
        plan()

    warm_us = statistics.median(timed_ms(plan) for _ in range(5)) * 1000
    cold_us = statistics.median(timed_ms(plan_cold) for _ in range(5)) * 1000
    rows.append(
        (
            f"30-day union count at {options.users:,} users",
            f"{cached['peer']:.2f} ms",
            f"{cached['ours']:.2f} ms ({fresh:.2f} ms with the cache off)",
            cached["ours"] / cached["peer"],
        )
    )
    notes.append(
        f"30-day range planning, Python alone (between() + compiling the query, no Redis): "
        f"{warm_us:.0f} µs, {cold_us:.0f} µs with the cover not cached yet; "
        f"{len(ours._cover_range(last30[0], last30[-1]))} keys cover the 30 days."
    )


def cohort(
    options: argparse.Namespace,
    days: list[date],
    truth: dict[date, set[int]],
    rows: list[Row],
    notes: list[str],
) -> None:
    """The 8-week retention table of the same marks."""
    from bitmapist.cohort import get_dates_data

    from django_redis_metrics import UniqueBitmap

    weeks: dict[tuple[int, int], set[int]] = defaultdict(set)
    for day, users in truth.items():
        weeks[day.isocalendar()[:2]] |= users
    sets = [weeks[key] for key in sorted(weeks)][-8:]
    expected = [
        [len(sets[i])] + [len(sets[i] & sets[j]) for j in range(i + 1, 8)] for i in range(8)
    ]

    def peer_table() -> list[list[int]]:
        data = get_dates_data(
            "bulk0", "bulk0", time_group="weeks", system=PEER, as_percent=False,
            num_results=8, num_of_rows=7,
        )  # fmt: skip
        return [[row[1]] + [int(v or 0) for v in row[3 : 3 + 7 - i]] for i, row in enumerate(data)]

    ours = UniqueBitmap("bulk0")
    check("8-week cohort", ours.cohort("week", periods=8), peer_table(), expected)
    trips = Trips()
    peer_trips = trips.during(peer_table)
    our_trips = trips.during(lambda: ours.cohort("week", periods=8))
    repeat = 10

    def timed_ms(action: Any) -> float:
        started = time.perf_counter()
        for _ in range(repeat):
            action()
        return (time.perf_counter() - started) / repeat * 1000

    result = interleaved(
        options.rounds,
        {
            "peer": lambda i: timed_ms(peer_table),
            "ours": lambda i: timed_ms(lambda: ours.cohort("week", periods=8)),
        },
    )
    rows.append(
        (
            "8-week cohort",
            f"`get_dates_data` {result['peer']:.2f} ms, {peer_trips} round trips",
            f"`cohort()` {result['ours']:.2f} ms, {our_trips}",
            result["ours"] / result["peer"],
        )
    )
    del notes  # nothing to add
