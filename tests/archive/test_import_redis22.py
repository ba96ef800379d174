"""``import_metrics --redis-metrics``: a keyspace written by django-redis-metrics 2.2 itself (its
``R`` class, on the suite's private redis-server) imported into the archive, on both databases,
and compared with what 2.2 wrote."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.utils.text import slugify

from django_redis_metrics.archive.imports import redis22
from django_redis_metrics.archive.imports.writing import Summary
from django_redis_metrics.core.connection import client_for_url
from django_redis_metrics.models import ArchivedSlice
from django_redis_metrics.testing import RedisServer

from .conftest import ARCHIVE_DATABASES

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES)
HOUR, DAY = 3600, 86400
#: The database of the private redis-server that holds the old site's keys (ours use 0).
OLD_DB = 9
#: What the old site recorded: (slug, when in UTC, as 2.2 stamps it, count, category).
RECORDED = [
    ("signups", datetime(2024, 3, 9, 22, 15), 3, None),
    ("signups", datetime(2024, 3, 9, 22, 50), 2, None),
    ("signups", datetime(2024, 3, 10, 0, 5), 4, None),
    ("signups", datetime(2024, 3, 11, 13, 0), 1, None),
    ("User Logins", datetime(2024, 3, 10, 9, 0), 7, "auth"),
    ("User Logins", datetime(2024, 3, 10, 9, 59, 59), 1, "auth"),
]


@dataclass
class OldSite:
    r: Any  # redis_metrics.models.R
    url: str


@pytest.fixture
def old_site(
    settings: Any, redis_server: RedisServer, single: Any, archive_db: str, metrics_settings: Any
) -> Iterator[OldSite]:
    """2.2's ``R`` on its own database of the private server, every granularity on (hours are
    off by default there), holding ``RECORDED``; the archive on this run's database."""
    from redis_metrics.models import R  # django-redis-metrics 2.2, a test dependency

    metrics_settings(ARCHIVE_DATABASE=archive_db)
    # Every key 2.2 reads, given: a missing one is looked up under a deprecated name, warning.
    settings.REDIS_METRICS = {
        "CONNECTION_CLASS": None,
        "HOST": "127.0.0.1",
        "PORT": redis_server.port,
        "DB": OLD_DB,
        "PASSWORD": None,
        "SSL": False,
        "SOCKET_TIMEOUT": 5,
        "SOCKET_CONNECTION_POOL": None,
        "MIN_GRANULARITY": "seconds",
        "MAX_GRANULARITY": "yearly",
        "MONDAY_FIRST_DAY_OF_WEEK": False,
        "USE_ISO_WEEK_NUMBER": False,
    }
    r = R()
    forget(r)
    for slug, when, count, category in RECORDED:
        r.metric(slug, num=count, category=category, date=when)
    yield OldSite(r, f"redis://127.0.0.1:{redis_server.port}/{OLD_DB}")
    forget(r)
    r.r.close()


def forget(r: Any) -> None:
    for key in list(r.r.scan_iter(count=100)):
        r.r.delete(key)


def written(r: Any, precisions: tuple[int, ...] = (HOUR, DAY)) -> dict[Any, int]:
    """What 2.2 holds of each hour and day recorded, read by its own key builder."""
    found = {}
    for slug, when, _, _ in RECORDED:
        for precision in precisions:
            name = {HOUR: "hourly", DAY: "daily"}[precision]
            key = r._build_keys(slug, date=when, granularity=name)[0]
            start = int(when.replace(tzinfo=UTC).timestamp()) // precision * precision
            found[(slugify(slug), precision, start)] = int(r.r.get(key))
    return found


def archived(using: str) -> dict[Any, int]:
    rows = ArchivedSlice.objects.using(using).filter(kind="counter")
    return {(r.series, r.precision, r.start): r.count for r in rows}


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_metrics", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_every_hour_and_day_of_every_slug_is_imported_as_written(
    old_site: OldSite, archive_db: str
) -> None:
    expected = written(old_site.r)
    assert expected[("signups", HOUR, 1710021600)] == 5  # 22:15 and 22:50 on 2024-03-09
    assert expected[("signups", DAY, 1709942400)] == 5
    assert expected[("user-logins", HOUR, 1710061200)] == 8
    assert any(k.startswith("m:signups:s:") for k in old_site.r.r.scan_iter("m:*"))
    out, err = run("--redis-metrics", old_site.url)
    assert archived(archive_db) == expected and len(expected) == 8
    rows = ArchivedSlice.objects.using(archive_db)
    assert {r.metric for r in rows} == {"signups", "user-logins"} == {r.series for r in rows}
    assert "counter 'signups' every 3600s: imported 3 slices" in out
    assert "imported 8 rows of 4 series" in out and err == ""


def test_an_import_twice_writes_the_same_rows_and_a_dry_run_none(
    old_site: OldSite, archive_db: str
) -> None:
    out, _ = run("--redis-metrics", old_site.url, "--dry-run")
    assert "would import 8 rows of 4 series" in out
    assert not ArchivedSlice.objects.using(archive_db).exists()
    run("--redis-metrics", old_site.url)
    once = archived(archive_db)
    run("--redis-metrics", old_site.url)
    assert archived(archive_db) == once == written(old_site.r)
    old_site.r.metric("signups", num=10, date=datetime(2024, 3, 11, 13, 30))
    run("--redis-metrics", old_site.url)
    assert archived(archive_db) == written(old_site.r)  # 11 in the hour: set, not added
    assert archived(archive_db)[("signups", HOUR, 1710162000)] == 11


def test_only_the_archives_precisions_are_imported(
    old_site: OldSite, archive_db: str, metrics_settings: Callable[..., None]
) -> None:
    metrics_settings(ARCHIVE_PRECISIONS=(DAY, 7 * DAY))
    run("--redis-metrics", old_site.url)
    assert archived(archive_db) == written(old_site.r, (DAY,))
    metrics_settings(ARCHIVE_PRECISIONS=(300,))
    with pytest.raises(CommandError, match=r"keeps hours \(3600\) and days \(86400\)"):
        run("--redis-metrics", old_site.url)


def test_keys_2_2_does_not_write_are_skipped_and_reported(
    old_site: OldSite, archive_db: str
) -> None:
    old_site.r.r.set("m:signups:h:2024-02-30-10", 3)  # no such day
    old_site.r.r.set("m:signups:2024-03-01", "lots")
    old_site.r.r.set("m:signups:2024-03-02", "-4")
    old_site.r.r.set("m:signups:h:2024-03-02-11", 0)  # an empty hour: no row
    old_site.r.r.set("m:signups:0001-01-01", 5)  # before any history() reads
    _, err = run("--redis-metrics", old_site.url)
    assert archived(archive_db) == written(old_site.r)
    assert "Skipped 4 keys that 2.2 does not write" in err
    assert "m:signups:0001-01-01: its date is not within the years 2 to 9998" in err
    assert "m:signups:h:2024-02-30-10: day is out of range" in err
    assert "m:signups:2024-03-01: its value 'lots' is not a count" in err


def test_a_prefix_and_renames(old_site: OldSite, archive_db: str) -> None:
    before = written(old_site.r)
    for key in list(old_site.r.r.scan_iter("m:*")):
        old_site.r.r.rename(key, f"old*site:{key}")
    out, _ = run("--redis-metrics", old_site.url)
    assert "imported 0 rows" in out and not ArchivedSlice.objects.using(archive_db).exists()
    out, _ = run(
        "--redis-metrics",
        old_site.url,
        "--prefix",
        "old*site:",
        "--rename",
        "user-logins",
        "logins{source=v2}",
    )
    renamed = {
        ("logins\x1fsource=v2" if series == "user-logins" else series, p, s): n
        for (series, p, s), n in before.items()
    }
    assert archived(archive_db) == renamed
    assert "counter 'logins{source=v2}' every 86400s: imported 1 slice" in out
    assert set(ArchivedSlice.objects.using(archive_db).values_list("metric", flat=True)) == {
        "signups",
        "logins",
    }


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--rename", "a", "x", "--rename", "a", "y"), "--rename names a slug twice"),
        (("--rename", "a", "x", "--rename", "b", "x"), "maps two slugs to one series"),
        (("--rename", "a", "x{y"), "is not a metric name"),
        (("--name", "x"), "--name, --column and --precision go with --csv"),
    ],
)
def test_wrong_options_are_refused_before_anything_is_read(
    old_site: OldSite, archive_db: str, args: tuple[str, ...], error: str
) -> None:
    with pytest.raises(CommandError, match=error):
        run("--redis-metrics", old_site.url, *args)
    assert not ArchivedSlice.objects.using(archive_db).exists()


def test_an_unreachable_or_wrong_url_says_so(single: Any) -> None:
    with pytest.raises(CommandError, match="is not a redis://"):
        run("--redis-metrics", "http://127.0.0.1:1/")
    with pytest.raises(CommandError, match=r"Redis at redis://\*\*\*@127.0.0.1:1/0 failed"):
        run("--redis-metrics", "redis://user:secret@127.0.0.1:1/0")


class Recording:
    """The real client, counting the commands the import sends."""

    def __init__(self, client: Any) -> None:
        self.client, self.scans, self.gets = client, [], []

    def scan(self, cursor: int, match: str, count: int) -> Any:
        self.scans.append(count)
        return self.client.scan(cursor, match=match, count=count)

    def mget(self, keys: list[str]) -> Any:
        self.gets.append(len(keys))
        return self.client.mget(keys)


def test_the_keyspace_is_read_with_scan_in_bounded_steps(
    old_site: OldSite, archive_db: str
) -> None:
    for day in range(1, 29):  # 28 more days of 24 keys each (7 granularities and categories)
        old_site.r.metric("pages", num=day, date=datetime(2024, 2, day, 12))
    client = Recording(client_for_url(old_site.url))
    summary = Summary()
    skipped = redis22.import_keyspace(
        client,  # type: ignore[arg-type]
        prefix="",
        renames={},
        precisions=(HOUR, DAY),
        using=archive_db,
        batch=10,
        summary=summary,
    )
    client.client.close()
    assert skipped.count == 0 and summary.rows == 8 + 28 * 2
    assert set(client.scans) == {10} and len(client.scans) > 10
    assert max(client.gets) <= 30  # a SCAN step's keys (COUNT is a hint), never the keyspace
    assert archived(archive_db)[("pages", DAY, 1708560000)] == 22
