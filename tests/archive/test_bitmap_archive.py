"""The bitmaps' archive pass: each closed period's count, and the bits of weeks and months,
equal to a plain Python model of the marks; labels kept; a pass run twice writes the same rows."""

from __future__ import annotations

import time
from typing import Any

import pytest

from django_redis_metrics import UniqueBitmap
from django_redis_metrics.archive.bits import unpack_bits
from django_redis_metrics.archive.passes import archive_all
from django_redis_metrics.core.periods import Day
from django_redis_metrics.models import ArchiveCursor, ArchivedPeriod

from ..clock import moment
from .conftest import ARCHIVE_DATABASES
from .sets_model import bits_of, by_period, marks

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES)
ZONE = "America/New_York"


@pytest.fixture(autouse=True)
def zone(backend: Any, metrics_settings: Any) -> None:
    metrics_settings(TIME_ZONE=ZONE)


def rows(alias: str, series: str) -> dict[tuple[str, int], tuple[int, set[int] | None]]:
    found = ArchivedPeriod.objects.using(alias).filter(kind="bitmap", series=series)
    return {
        (row.period, row.start): (row.count, bits_of(unpack_bits(row.data)) if row.data else None)
        for row in found
    }


def expected(pairs: list[tuple[int, float]], now: float) -> dict[tuple[str, int], Any]:
    out: dict[tuple[str, int], Any] = {}
    for name in ("day", "week", "month"):
        for period, users in by_period(pairs, name, ZONE).items():
            if period.end_ts <= now:
                out[(name, int(period.start_ts))] = (
                    len(users),
                    None if name == "day" else users,
                )
    return out


def test_a_pass_archives_every_closed_period_as_the_marks_say(
    backend: Any, archive_db: str
) -> None:
    now = time.time()
    pairs = marks(now, 80, seed=1)
    active = UniqueBitmap("active")
    plans = UniqueBitmap("plans", labels=("plan",))
    pro = plans.labels(plan="pro")
    active.mark_many(pairs)
    pro.mark_many(pairs[::3])
    [report] = archive_all(now=now, kinds=["bitmap"], using=archive_db)
    assert report.series == 2
    assert rows(archive_db, "active") == expected(pairs, now)
    assert rows(archive_db, "plans\x1fplan=pro") == expected(pairs[::3], now)
    labelled = ArchivedPeriod.objects.using(archive_db).filter(series="plans\x1fplan=pro")
    assert set(labelled.values_list("metric", flat=True)) == {"plans"}
    cursors = ArchiveCursor.objects.using(archive_db).filter(kind="bitmap")
    assert {c.precision for c in cursors} == {"day", "week", "month"}

    before = sorted(
        ArchivedPeriod.objects.using(archive_db).values_list("series", "period", "start", "count")
    )
    [again] = archive_all(now=now, kinds=["bitmap"], using=archive_db)
    after = sorted(
        ArchivedPeriod.objects.using(archive_db).values_list("series", "period", "start", "count")
    )
    assert after == before
    assert again.rows < report.rows  # the second pass reads only the last closed periods


def test_a_day_closed_moments_before_a_pass_is_read_again_by_the_next(archive_db: str) -> None:
    """A pass reads again what closed less than LATE_GRACE before the last pass (late marks),
    and not what had closed long before it: a steady pass costs what closed since."""
    now = time.time()
    day = Day.containing(now, ZONE).shift(-3)
    active = UniqueBitmap("active", periods=("day",))
    active.mark(1, moment(day, 60, now=now))
    rows = ArchivedPeriod.objects.using(archive_db).filter(series="active", start=day.start_ts)

    archive_all(now=day.end_ts + 60, kinds=["bitmap"], using=archive_db)
    assert rows.get().count == 1
    active.mark(2, day.end_ts - 1)  # stamped in the day, reaching Redis after the pass
    archive_all(now=day.end_ts + 7200, kinds=["bitmap"], using=archive_db)
    assert rows.get().count == 2
    active.mark(3, day.end_ts - 2)  # long after: the day is not read again
    archive_all(now=day.end_ts + 2 * 86400, kinds=["bitmap"], using=archive_db)
    assert rows.get().count == 2


def test_a_dry_run_counts_what_it_would_archive_and_writes_nothing(archive_db: str) -> None:
    now = time.time()
    UniqueBitmap("active").mark_many(marks(now, 10, seed=7))
    [report] = archive_all(now=now, kinds=["bitmap"], using=archive_db, dry_run=True)
    assert report.dry_run and report.series == 1 and report.rows >= 10
    assert "would archive" in report.summary()
    assert not ArchivedPeriod.objects.using(archive_db).exists()
    assert not ArchiveCursor.objects.using(archive_db).exists()
