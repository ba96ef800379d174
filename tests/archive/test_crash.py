"""A pass killed with SIGKILL midway loses nothing and counts nothing twice once rerun.

``manage.py archive_metrics`` runs in a subprocess on PostgreSQL or on a SQLite *file*
database, sleeping after each batch (``DRM_ARCHIVE_TEST_PAUSE``, test-only), and is killed once
some batches are written: its cursor has not moved, so the next pass reads the same slices
again and its upserts set the rows already there. The totals come out exact.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from django.db import connections

from django_redis_metrics import Counter
from django_redis_metrics.archive.sliced import PAUSE_ENVIRON
from django_redis_metrics.core.timeutil import slice_start
from django_redis_metrics.models import ArchiveCursor, ArchivedSlice

from ..conftest import Backend
from .conftest import ARCHIVE_DATABASES

pytestmark = pytest.mark.django_db(databases=ARCHIVE_DATABASES, transaction=True)

ROOT = Path(__file__).resolve().parents[2]
SERIES = 24
BATCH = 3
SLICES = 3


@pytest.fixture
def database(archive_db: str, tmp_path: Path) -> dict[str, Any]:
    """The subprocess's archive database: this run's PostgreSQL test database, or a SQLite
    file migrated for the test."""
    if archive_db == "postgres":
        given = connections["postgres"].settings_dict
        return {key: given[key] for key in ("ENGINE", "HOST", "PORT", "USER", "NAME")}
    found = {"ENGINE": "django.db.backends.sqlite3", "NAME": str(tmp_path / "archive.sqlite3")}
    _manage(found, {"CONNECTION": "redis://127.0.0.1:1/0"}, "migrate", "-v", "0").check_returncode()
    return found


def _env(database: dict[str, Any], metrics: dict[str, Any], pause: float = 0) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.archive.process_settings",
        "PYTHONPATH": str(ROOT),
        "DRM_TEST_DATABASE": json.dumps(database),
        "DRM_TEST_METRICS": json.dumps(metrics),
    }
    env.pop(PAUSE_ENVIRON, None)
    if pause:
        env[PAUSE_ENVIRON] = str(pause)
    return env


def _manage(
    database: dict[str, Any], metrics: dict[str, Any], *args: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "django", *args],
        cwd=ROOT,
        env=_env(database, metrics),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _rows(database: dict[str, Any], archive_db: str) -> dict[tuple[str, int], int]:
    """``{(series, start): count}`` archived, read as the subprocess wrote it."""
    if archive_db == "postgres":
        found = ArchivedSlice.objects.using("postgres").values_list("series", "start", "count")
        return {(series, start): count for series, start, count in found}
    with closing(sqlite3.connect(database["NAME"])) as db:
        table = ArchivedSlice._meta.db_table
        found = db.execute(f"SELECT series, start, count FROM {table}").fetchall()
    return {(series, start): count for series, start, count in found}


def _cursors(database: dict[str, Any], archive_db: str) -> int:
    if archive_db == "postgres":
        return ArchiveCursor.objects.using("postgres").count()
    with closing(sqlite3.connect(database["NAME"])) as db:
        table = ArchiveCursor._meta.db_table
        return int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


def test_a_pass_killed_midway_then_rerun_archives_exact_totals(
    single: Backend,
    metrics_settings: Callable[..., None],
    archive_db: str,
    database: dict[str, Any],
    tmp_path: Path,
) -> None:
    metrics = {
        "CONNECTION": single.url,
        "PREFIX": single.prefix,
        "ARCHIVE_PRECISIONS": [3600],
        "ARCHIVE_BATCH": BATCH,
    }
    metrics_settings(**{k: v for k, v in metrics.items() if k.startswith("ARCHIVE")})
    first = slice_start(time.time(), 3600) - SLICES * 3600  # closed hours only
    expected = {}
    for i in range(SERIES):
        counter = Counter(f"c{i:02}")
        for k in range(SLICES):
            counter.incr((i + 1) * (k + 1), when=first + k * 3600 + 60)
            expected[(counter.name, first + k * 3600)] = (i + 1) * (k + 1)

    env = _env(database, metrics, pause=0.4)
    with open(tmp_path / "stderr", "w+") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "django", "archive_metrics", "--kind", "counter"],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=errors,
        )
        try:
            deadline = time.monotonic() + 60
            while len(_rows(database, archive_db)) < 2 * BATCH * SLICES:
                assert process.poll() is None, (tmp_path / "stderr").read_text()
                assert time.monotonic() < deadline, "the pass wrote no batch in a minute"
                time.sleep(0.05)
            process.send_signal(signal.SIGKILL)
        finally:
            process.kill()
            process.wait()
    partial = _rows(database, archive_db)
    assert 0 < len(partial) < len(expected)  # killed midway, really
    assert all(expected[key] == count for key, count in partial.items())
    assert _cursors(database, archive_db) == 0  # the cursor moves only after a whole pass

    for _ in range(2):  # the rerun, then one more: exact both times
        done = _manage(database, metrics, "archive_metrics", "--kind", "counter")
        assert done.returncode == 0, done.stderr
        assert _rows(database, archive_db) == expected
    assert _cursors(database, archive_db) == 1
