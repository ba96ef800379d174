"""Two archive passes racing on PostgreSQL (two threads, two connections, started together)
write every slice once with its exact value: the upserts set, never add, and lock rows in one
order, so neither pass waits on the other in a cycle."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connections

from django_redis_metrics import Counter, Statistic
from django_redis_metrics.archive.passes import archive_all
from django_redis_metrics.core.timeutil import slice_start
from django_redis_metrics.models import ArchiveCursor, ArchivedSlice

from ..conftest import Backend
from .conftest import ARCHIVE_DATABASES

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES, transaction=True)

SERIES = 60
SLICES = 4


# PostgreSQL only: SQLite serialises writers, so two passes there never overlap.
@pytest.mark.parametrize("archive_db", ["postgres"], indirect=True)
def test_two_passes_racing_archive_exact_totals(
    backend: Backend, metrics_settings: Callable[..., None], archive_db: str
) -> None:
    metrics_settings(ARCHIVE_PRECISIONS=(3600,), ARCHIVE_DATABASE=archive_db, ARCHIVE_BATCH=7)
    now = time.time()
    first = slice_start(now, 3600) - SLICES * 3600
    counts: dict[tuple[str, int], int] = {}
    for i in range(SERIES):
        counter = Counter(f"race{i:02}", labels=("shard",)).labels(shard=str(i % 3))
        latency = Statistic(f"race_ms{i:02}")
        for k in range(SLICES):
            counter.incr(i + k + 1, when=first + k * 3600 + 1)
            latency.record_many([i, k, 1.5], when=first + k * 3600 + 1)
            counts[(counter.name, first + k * 3600)] = i + k + 1
    start = threading.Barrier(2)
    errors: list[BaseException] = []

    def one_pass() -> None:
        try:
            start.wait()
            archive_all(now=now)
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=one_pass) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    rows = ArchivedSlice.objects.using(archive_db)
    found = rows.filter(kind="counter").values_list("series", "start", "count")
    assert {(series, start): count for series, start, count in found} == counts
    assert sum(rows.filter(kind="statistic").values_list("count", flat=True)) == SERIES * SLICES * 3
    cursors = ArchiveCursor.objects.using(archive_db).values_list("kind", "until")
    until = first + SLICES * 3600
    assert sorted(cursors) == [("counter", until), ("gauge", until), ("statistic", until)]
