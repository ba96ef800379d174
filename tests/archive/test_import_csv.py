"""``import_metrics --csv``: the admin's own export read back into the archive, on both
databases; checked by reading the rows back and against the metric the export was made of."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from django_redis_metrics import Counter, Gauge, Statistic
from django_redis_metrics.archive.imports import csvfile, writing
from django_redis_metrics.models import ArchivedSlice

from ..django_site import admin_url
from .conftest import ARCHIVE_DATABASES

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES)
HOUR, DAY = 3600, 86400


@pytest.fixture
def archive_to(archive_db: str, metrics_settings: Callable[..., None]) -> str:
    """``ARCHIVE_DATABASE`` set to the database of this run."""
    metrics_settings(ARCHIVE_DATABASE=archive_db)
    return archive_db


@pytest.fixture
def kolkata(settings: Any, analyst: Any) -> Any:
    """The admin in a zone half an hour off UTC: hour slices are exported as hh:30+05:30."""
    settings.TIME_ZONE = "Asia/Kolkata"
    return analyst


@pytest.fixture
def now(monkeypatch: pytest.MonkeyPatch) -> float:
    """One reading of the clock, which the import's clock keeps: the slice holding it is the
    open one, whatever the hour."""
    reading = time.time()
    monkeypatch.setattr(csvfile, "current_time", lambda: reading)
    return reading


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("import_metrics", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def export(client: Any, model: str, query: str, path: Path) -> Path:
    response = client.get(admin_url(model, "data") + f"?{query}&format=csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    path.write_bytes(response.content)
    return path


def counts(using: str, kind: str = "counter") -> dict[tuple[str, int, int], int]:
    rows = ArchivedSlice.objects.using(using).filter(kind=kind)
    return {(r.series, r.precision, r.start): r.count for r in rows}


def write_csv(path: Path, lines: list[list[str]]) -> str:
    with path.open("w", newline="", encoding="utf-8") as file:
        csv.writer(file, lineterminator="\n").writerows(lines)
    return str(path)


def test_a_counters_export_imports_as_its_closed_slices(
    kolkata: Any, archive_to: str, tmp_path: Path, now: float
) -> None:
    hits = Counter("hits", precisions=[60, HOUR])
    for hours_ago, count in ((0, 2), (1, 5), (7, 1), (30, 9)):
        hits.incr(count, when=now - hours_ago * HOUR)
    path = export(kolkata, "countermetric", "name=hits&precision=3600", tmp_path / "hits.csv")
    assert "+05:30" in path.read_text()
    out, _ = run("--csv", str(path), "--name", "hits", "--precision", "3600")
    *closed, (open_start, _) = hits.series(HOUR)
    assert open_start <= now < open_start + HOUR
    expected = {("hits", HOUR, start): count for start, count in closed}
    assert counts(archive_to) == expected and len(expected) == 3
    assert {r.metric for r in ArchivedSlice.objects.using(archive_to)} == {"hits"}
    assert "imported 3 slices" in out and "15 counted" in out
    assert "Not imported: 1 slice(s) still open, from " in out
    assert "Columns not imported" not in out


def test_an_import_twice_writes_the_same_rows_and_a_new_file_sets_values(
    archive_to: str, tmp_path: Path
) -> None:
    first = write_csv(
        tmp_path / "a.csv",
        [
            ["start", "label", "value"],
            ["2024-03-10T00:00:00+00:00", "2024-03-10 UTC", "4"],
            ["2024-03-11T01:00:00+01:00", "2024-03-11 UTC", "0"],  # midnight UTC; no slice
            ["2024-03-12T00:00:00+00:00", "2024-03-12 UTC", "6"],
        ],
    )
    args = ("--csv", first, "--name", "signups", "--precision", "86400")
    run(*args)
    once = counts(archive_to)
    run(*args)
    assert once == {("signups", DAY, 1710028800): 4, ("signups", DAY, 1710201600): 6}
    assert counts(archive_to) == once
    corrected = write_csv(
        tmp_path / "b.csv",
        [["start", "label", "value"], ["2024-03-10T00:00:00Z", "2024-03-10 UTC", "5"]],
    )
    run("--csv", corrected, "--name", "signups", "--precision", "86400")
    assert counts(archive_to)[("signups", DAY, 1710028800)] == 5  # set, never added


def test_dry_run_says_what_it_would_write_and_writes_nothing(
    archive_to: str, tmp_path: Path
) -> None:
    path = write_csv(
        tmp_path / "a.csv",
        [["start", "label", "value"], ["2024-03-10T00:00:00+00:00", "x", "4"]],
    )
    out, _ = run("--csv", path, "--name", "signups", "--precision", "86400", "--dry-run")
    assert "counter 'signups' every 86400s: would import 1 slice" in out
    assert "from 2024-03-10T00:00Z to 2024-03-10T00:00Z, 4 counted" in out
    assert not ArchivedSlice.objects.using(archive_to).exists()


def test_columns_map_to_metrics_and_labelled_series(
    kolkata: Any, archive_to: str, tmp_path: Path, now: float
) -> None:
    """A labelled counter's chart exports one column per breakdown line; each maps to a
    series with --column HEADING NAME, the total (``value``) to the metric's own name."""
    hits = Counter("views", precisions=[HOUR], labels=("view",))
    hits.labels(view="home").incr(3, when=now - 2 * HOUR)
    hits.labels(view="about").incr(2, when=now - 2 * HOUR)
    hits.labels(view="home").incr(1, when=now - 5 * HOUR)
    hits.labels(view="home").incr(1, when=now)  # still open: not imported
    query = "name=views&precision=3600&compare=day"
    path = export(kolkata, "countermetric", query, tmp_path / "views.csv")
    header = next(csv.reader(io.StringIO(path.read_text())))
    assert {"view=home", "view=about", "the day before", "value"} <= set(header)
    out, _ = run(
        "--csv",
        str(path),
        "--precision",
        "3600",
        "--column",
        "view=home",
        "views{view=home}",
        "--column",
        "value",
        "all_views",
    )
    home = hits.labels(view="home").series(HOUR)
    assert counts(archive_to) == {
        ("views\x1fview=home", HOUR, home[0][0]): 1,
        ("views\x1fview=home", HOUR, home[1][0]): 3,
        ("all_views", HOUR, home[0][0]): 1,
        ("all_views", HOUR, home[1][0]): 5,
    }
    assert {
        r.metric for r in ArchivedSlice.objects.using(archive_to).filter(series__contains="\x1f")
    } == {"views"}
    assert "Columns not imported: 'the day before', 'view=about'" in out
    with pytest.raises(CommandError, match="previous period overlaid"):
        run("--csv", str(path), "--precision", "3600", "--column", "the day before", "x")


def test_a_gauges_export_imports_last_min_and_max(
    kolkata: Any, archive_to: str, tmp_path: Path, now: float
) -> None:
    queue = Gauge("queue", precisions=[HOUR])
    queue.set(4, when=now - 3 * HOUR - 10)
    queue.set(9, when=now - 3 * HOUR - 5)
    queue.set(6, when=now - 3 * HOUR)
    queue.set(2, when=now)
    path = export(kolkata, "gaugemetric", "name=queue&precision=3600", tmp_path / "queue.csv")
    with pytest.raises(CommandError, match="gauge's export: import it with --kind gauge"):
        run("--csv", str(path), "--name", "queue", "--precision", "3600")
    run("--csv", str(path), "--kind", "gauge", "--name", "queue", "--precision", "3600")
    rows = ArchivedSlice.objects.using(archive_to).filter(kind="gauge").order_by("start")
    found = [(r.start, {"last": r.last, "min": r.minimum, "max": r.maximum}) for r in rows]
    assert found == queue.series(HOUR)[:-1] and len(found) >= 1  # the open slice left out
    assert {(r.series, r.precision, r.count) for r in rows} == {("queue", HOUR, 1)}


def test_a_statistics_export_is_refused_saying_why(
    kolkata: Any, archive_to: str, tmp_path: Path
) -> None:
    latency = Statistic("latency", precisions=[HOUR])
    latency.record(12.5)
    path = export(kolkata, "statisticmetric", "name=latency&precision=3600", tmp_path / "l.csv")
    for kind in ("counter", "statistic"):
        with pytest.raises(CommandError, match="not the count, sum, sum of squares"):
            run("--csv", str(path), "--kind", kind, "--name", "latency", "--precision", "3600")
    assert not ArchivedSlice.objects.using(archive_to).exists()


GOOD = ["2024-03-10T00:00:00+00:00", "2024-03-10 UTC", "4"]


@pytest.mark.parametrize(
    ("line", "error"),
    [
        (["2024-03-11T00:00:00+00:00", "x", "3.5"], "line 3: '3.5' is not a count"),
        (["2024-03-11T00:00:00+00:00", "x", "-1"], "line 3: '-1' is not a count"),
        (["2024-03-11T00:00:00", "x", "3"], "line 3: start '2024-03-11T00:00:00' has no UTC"),
        (["yesterday", "x", "3"], "line 3: start 'yesterday' is not an ISO 8601"),
        (["2024-03-11T01:00:00+00:00", "x", "3"], "line 3: .* does not begin a slice of 86400"),
        (["2024-03-09T00:00:00+00:00", "x", "3"], "line 3: its start is not after"),
        (["2024-03-10T00:00:00+00:00", "x", "3"], "line 3: its start is not after"),
        (["2024-03-11T00:00:00+00:00", "3"], "line 3: 2 cells, where the header has 3"),
        (["0001-01-01T00:00:00+00:00", "x", "3"], "line 3: .* is not within the years 2 to"),
        (["9999-01-01T00:00:00+00:00", "x", "3"], "line 3: .* is not within the years 2 to"),
        (["2024-03-11T00:00:00+00:00", "x" * 200_000, "3"], r"line 3: field larger than"),
    ],
)
def test_a_wrong_line_is_named_and_nothing_of_the_file_is_written(
    archive_to: str, tmp_path: Path, line: list[str], error: str
) -> None:
    later = ["2024-03-12T00:00:00+00:00", "x", "1"]
    path = write_csv(tmp_path / "bad.csv", [["start", "label", "value"], GOOD, line, later])
    with pytest.raises(CommandError, match=error) as raised:
        run("--csv", path, "--name", "signups", "--precision", "86400")
    assert str(raised.value).startswith(path) and "Nothing was imported" in str(raised.value)
    assert not ArchivedSlice.objects.using(archive_to).exists()


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (("--name", "bad{name"), "is not a metric name nor NAME"),
        (("--name", "hits{view}"), "each label is label=value"),
        (("--name", "hits{__x=1}"), "reserved"),
        (("--name", " "), "must not be empty or blank"),
        (("--name", "a", "--precision", "60"), r"--precision 60: the archive keeps .*3600, 86400"),
        (("--name", "a", "--column", "value", "b"), "--name and --column value both"),
        (("--column", "clicks", "b"), "has no column of values 'clicks'; it has 'value'"),
        (("--column", "start", "b"), "has no column of values 'start'"),
        (("--name", "a", "--rename", "x", "y"), "--rename and --prefix go with --redis"),
        ((), "Say where the values go"),
    ],
)
def test_options_are_checked_before_anything_is_written(
    archive_to: str, tmp_path: Path, args: tuple[str, ...], error: str
) -> None:
    path = write_csv(tmp_path / "a.csv", [["start", "label", "value"], GOOD])
    given = args if "--precision" in args else (*args, "--precision", "86400")
    with pytest.raises(CommandError, match=error):
        run("--csv", path, *given)
    assert not ArchivedSlice.objects.using(archive_to).exists()


def test_files_that_are_not_exports_are_refused(archive_to: str, tmp_path: Path) -> None:
    args = ("--name", "a", "--precision", "86400")
    with pytest.raises(CommandError, match="No such file"):
        run("--csv", str(tmp_path / "missing.csv"), *args)
    other = write_csv(tmp_path / "other.csv", [["date", "hits"], ["2024-03-10", "3"]])
    with pytest.raises(CommandError, match="line 1: not the admin's export"):
        run("--csv", other, *args)
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"start,label,value\n\xff\xfe,x,1\n")
    with pytest.raises(CommandError, match="is not UTF-8 text"):
        run("--csv", str(binary), *args)
    with pytest.raises(CommandError, match="--csv needs --precision"):
        run("--csv", other, "--name", "a")
    with pytest.raises(CommandError, match="--database 'old' is not in DATABASES"):
        run("--csv", other, *args, "--database", "old")
    assert not ArchivedSlice.objects.using(archive_to).exists()


def test_rows_are_written_in_batches_of_archive_batch(
    archive_to: str,
    tmp_path: Path,
    metrics_settings: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    metrics_settings(ARCHIVE_BATCH=2)
    sizes: list[int] = []
    upsert = writing.upsert_slices

    def recorded(rows: Any, using: str, fields: Any) -> int:
        sizes.append(len(rows))
        return upsert(rows, using, fields)

    monkeypatch.setattr(writing, "upsert_slices", recorded)
    days = [[f"2024-03-{d:02}T00:00:00+00:00", "x", str(d)] for d in range(1, 6)]
    path = write_csv(tmp_path / "a.csv", [["start", "label", "value"], *days])
    run("--csv", path, "--name", "signups", "--precision", "86400")
    assert sizes == [2, 2, 1]
    assert sorted(counts(archive_to).values()) == [1, 2, 3, 4, 5]


def test_an_open_slice_is_checked_too_though_never_written(
    archive_to: str, tmp_path: Path, now: float
) -> None:
    today = datetime.fromtimestamp(now // DAY * DAY, UTC).isoformat()
    lines = [["start", "label", "value"], GOOD, [today, "today", "x"]]
    path = write_csv(tmp_path / "a.csv", lines)
    with pytest.raises(CommandError, match="line 3: 'x' is not a count"):
        run("--csv", path, "--name", "signups", "--precision", "86400")
    lines[-1][-1] = "8"
    out, _ = run(
        "--csv", write_csv(tmp_path / "b.csv", lines), "--name", "a", "--precision", "86400"
    )
    assert counts(archive_to) == {("a", DAY, 1710028800): 4}
    assert f"Not imported: 1 slice(s) still open, from {today[:16]}Z" in out
