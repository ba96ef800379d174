"""The demo site: set up from scratch on a private Redis, its metrics.py discovered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

MANAGE = Path(__file__).resolve().parents[2] / "example_project" / "manage.py"


def manage(tmp_path: Path, redis_url: str, *args: str) -> str:
    env = {**os.environ, "REDIS_URL": redis_url, "DEMO_DATABASE": str(tmp_path / "demo.db")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    result = subprocess.run([sys.executable, str(MANAGE), *args], env=env, capture_output=True,
                            text=True, timeout=300)
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
    )
    output = manage(tmp_path, redis_server.url, "shell", "--verbosity", "0", "-c", script)
    lines = dict(line.split(" ", 1) for line in output.splitlines() if " " in line)
    assert lines["discovered"] == "True"
    assert set(lines["counters"].split()) >= {"hits", "hits:home", "hits:product", "signups"}
    assert lines["series"].split() == ["downloads", "orders"]
    assert lines["bitmaps"].split() == ["active_users", "buyers"]
    assert int(lines["week"]) > 10


def test_demo_downloads_index_only_files_that_exist(tmp_path: Path, redis_server: Any) -> None:
    """Made-up file names answer 404 and create no key (each indexed value is a sorted set)."""
    script = (
        "from django.test import Client\n"
        "from django_redis_metrics import EventSeries, recorder\n"
        "client = Client()\n"
        "print('known', client.get('/downloads/manual.pdf/').status_code)\n"
        "print('unknown', ' '.join(str(client.get(f'/downloads/made-up-{i}/').status_code)"
        " for i in range(20)))\n"
        "recorder.flush()\n"
        "print('values', ' '.join(sorted(EventSeries('downloads').count_by('file', 0, 2e9))))\n"
    )
    output = manage(tmp_path, redis_server.url, "shell", "--verbosity", "0", "-c", script)
    lines = dict(line.split(" ", 1) for line in output.splitlines() if " " in line)
    assert lines["known"] == "200"
    assert set(lines["unknown"].split()) == {"404"}
    values = set(lines["values"].split())  # the other test's generated traffic may be there
    assert "manual.pdf" in values
    assert values <= {"manual.pdf", "price-list.csv", "logo.svg"}
