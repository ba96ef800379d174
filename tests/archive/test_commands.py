"""``manage.py archive_metrics``, the archive pass of each ``clean_metrics`` pass, and the
system checks of the archive's precisions (W070, W071)."""

from __future__ import annotations

import time
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError

from django_redis_metrics import Counter, Gauge, Statistic
from django_redis_metrics.archive.checks import check_archive_precisions
from django_redis_metrics.core.timeutil import slice_start
from django_redis_metrics.management.commands import clean_metrics
from django_redis_metrics.models import ArchiveCursor, ArchivedSlice

from ..conftest import Backend
from .conftest import ARCHIVE_DATABASES

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES, transaction=True)


@pytest.fixture
def written(single: Backend, metrics_settings: Callable[..., None]) -> float:
    """A counter, a statistic and a gauge written an hour and more ago (closed hourly slices);
    returns the time written."""
    metrics_settings(ARCHIVE_PRECISIONS=(3600,))
    at = float(slice_start(time.time(), 3600) - 3600)
    Counter("signups").incr(3, when=at)
    Statistic("latency").record(12.5, when=at)
    Gauge("queue").set(7, when=at)
    return at


def _rows(using: str = "default") -> list[tuple[str, str, int]]:
    found = ArchivedSlice.objects.using(using).values_list("kind", "series", "start")
    return sorted(found)


def test_archive_metrics_archives_every_kind_and_says_what(written: float) -> None:
    out = StringIO()
    call_command("archive_metrics", stdout=out)
    assert _rows() == [
        ("counter", "signups", written),
        ("gauge", "queue", written),
        ("statistic", "latency", written),
    ]
    assert "counter: archived 1 rows of 1 series" in out.getvalue()
    row = ArchivedSlice.objects.get(kind="statistic")
    assert (row.count, row.total, row.minimum, row.maximum) == (1, 12.5, 12.5, 12.5)
    assert ArchivedSlice.objects.get(kind="gauge").last == 7.0


def test_dry_run_kind_and_database(written: float, archive_db: str) -> None:
    out = StringIO()
    call_command("archive_metrics", "--dry-run", "--database", archive_db, stdout=out)
    assert "counter: would archive 1 rows of 1 series" in out.getvalue()
    assert _rows(archive_db) == [] and not ArchiveCursor.objects.using(archive_db).exists()
    call_command("archive_metrics", "--kind", "counter", "--database", archive_db, stdout=out)
    assert _rows(archive_db) == [("counter", "signups", written)]
    with pytest.raises(CommandError, match="Unknown kind 'nope'"):
        call_command("archive_metrics", "--kind", "nope")
    with pytest.raises(CommandError, match="--database 'elsewhere' is not an alias"):
        call_command("archive_metrics", "--database", "elsewhere")


def test_clean_metrics_archives_after_cleaning_unless_told_not_to(written: float) -> None:
    out = StringIO()
    call_command("clean_metrics", "--no-archive", stdout=out)
    assert _rows() == [] and "archive:" not in out.getvalue()
    call_command("clean_metrics", stdout=out)
    assert "pass 0: archive: counter: archived 1 rows" in out.getvalue()
    assert len(_rows()) == 3


def test_a_database_error_in_the_archive_does_not_stop_the_cleaning_loop(
    written: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(**kwargs: Any) -> Any:
        raise OperationalError("database is locked")

    monkeypatch.setattr(clean_metrics, "archive_all", failing)
    out, err = StringIO(), StringIO()
    call_command(
        "clean_metrics", "--loop", "--interval", "0.01", "--max-passes", "2", stdout=out, stderr=err
    )
    assert err.getvalue().count("archive: the database failed: database is locked") == 2
    assert "pass 1: counter: checked" in out.getvalue()  # the loop went on cleaning


def test_checks_warn_of_unkept_precisions_and_of_too_short_retention(
    single: Backend, metrics_settings: Callable[..., None]
) -> None:
    assert check_archive_precisions() == []  # the defaults are sound
    metrics_settings(ARCHIVE_PRECISIONS=(3600, 7200))
    found = check_archive_precisions()
    assert [m.id for m in found] == ["django_redis_metrics.W070"] * 2
    assert "7200 s, which counters and gauges do not keep" in found[0].msg
    metrics_settings(ARCHIVE_PRECISIONS=(60,), COUNTER_PRECISIONS=(60,), COUNTER_SAMPLES=2)
    found = check_archive_precisions()
    assert "django_redis_metrics.W071" in [m.id for m in found]
    assert any("forgets a slice about 60 s after it closes" in m.msg for m in found)
