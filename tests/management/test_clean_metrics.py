"""``manage.py clean_metrics``: every kind, --dry-run, verbosity, and an unreachable Redis."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from django_redis_metrics import Counter, EventSeries, UniqueBitmap, cleanup
from django_redis_metrics.archive.passes import archivers
from django_redis_metrics.bitmaps import model as bitmap_model
from django_redis_metrics.bitmaps.retention import MAX_KEEP
from django_redis_metrics.core.cleaning import STRAY_TEMP_TTL
from django_redis_metrics.core.keys import temp_key
from django_redis_metrics.core.periods import period_class
from django_redis_metrics.testing import RedisServer

# clean_metrics archives into the database after each pass (docs/history.md).
pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[2]
DAY = 86400


def run(*args: str) -> str:
    out = StringIO()
    call_command("clean_metrics", *args, stdout=out)
    return out.getvalue()


def snapshot(backend: Any) -> dict[str, tuple[bytes, int]]:
    """Every key of the test, with its serialized value and expiry time (absolute: a TTL
    would tick down while the test runs): any change shows."""
    client = backend.client
    return {key: (client.dump(key), client.pexpiretime(key)) for key in backend.keys()}


@pytest.fixture
def old_data(single: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Data due for cleaning in every kind the cleaners know: what writes leave to the cleaner
    (a counter nobody writes any more, slices a version without write-time retention left,
    periods and events kept under a longer retention than the one configured now)."""
    now = time.time()
    Counter("fresh", precisions=[1, 60]).incr()
    old = Counter("old", precisions=[1, 60], samples=10)
    old.incr(when=now)
    for precision in (1, 60):
        single.client.hset(old.key(precision), int(now - 2 * DAY) // precision * precision, 1)
    Counter("gone", precisions=[1], samples=5).incr(when=now - DAY)
    stray = temp_key("bitmap", "active", "crashed")
    single.client.set(stray, b"\x01")
    kept = temp_key("bitmap", "active", "running")
    single.client.set(kept, b"\x01", ex=300)
    # A metric whose *name* contains ":tmp:" is never mistaken for a temporary key.
    Counter("a:tmp:b", precisions=[60]).incr()
    single.stray = stray
    visitors = UniqueBitmap("visitors", periods=["day", "month"])
    visitors.mark(7, when=now)
    with monkeypatch.context() as longer:
        longer.setattr(bitmap_model, "retention", lambda: MAX_KEEP)
        visitors.mark(7, when=now - 200 * DAY)  # its day is past the 92 days kept; its month not
    single.old_day_key = visitors.key(period_class("day").containing(now - 200 * DAY))
    single.old_month_key = visitors.key(period_class("month").containing(now - 200 * DAY))
    orders = EventSeries("orders", index=["country"])  # kept 30 days by default
    with monkeypatch.context() as unpruned:
        unpruned.setattr(EventSeries, "PRUNE_PER_WRITE", 0)
        orders.record(when=now - 40 * DAY, country="FR")
        orders.record(when=now - 39 * DAY, country="DE")
        orders.record(when=now, country="FR")
    return single


def test_dry_run_changes_nothing_and_says_what_it_would_do(old_data: Any) -> None:
    before = snapshot(old_data)
    output = run("--dry-run", "--verbosity", "2")
    assert snapshot(old_data) == before
    assert "dry run: nothing is changed" in output
    assert "counter: checked 4, would remove 3 old entries and 1 empty metrics" in output
    assert "would give 1 stray ones (left without a TTL) 60 s to live" in output
    assert "counter 'gone': empty, removed from the catalogue" in output
    assert "bitmap: checked 1, would remove 1 old entries" in output
    assert "bitmap 'visitors': 1 day periods" in output
    assert "events: checked 1, would remove 2 old entries" in output
    assert "event series 'orders': 2 events" in output


def test_one_pass_cleans_every_kind(old_data: Any) -> None:
    output = run()
    assert "counter: checked 4, removed 3 old entries and 1 empty metrics" in output
    assert "gave 1 stray ones (left without a TTL) 60 s to live" in output
    assert Counter.objects.names() == ["a:tmp:b", "fresh", "old"]
    assert Counter("old", precisions=[1, 60]).total(60) == 1
    assert 0 < old_data.client.ttl(old_data.stray) <= STRAY_TEMP_TTL
    assert old_data.client.ttl(f"{old_data.prefix}:counter:{{a:tmp:b}}:60") > STRAY_TEMP_TTL
    assert "bitmap: checked 1, removed 1 old entries" in output
    assert not old_data.client.exists(old_data.old_day_key)
    assert old_data.client.exists(old_data.old_month_key)
    assert UniqueBitmap("visitors").count("day") == 1
    assert "events: checked 1, removed 2 old entries" in output
    orders = EventSeries("orders", index=["country"])
    assert orders.size() == 1
    assert orders.count_by("country", 0, time.time()) == {"FR": 1}
    assert list(cleanup.CLEANERS) == [
        "counter",
        "events",
        "bitmap",
        "estimate",
        "statistic",
        "gauge",
        "temporary",
    ]


def test_verbosity(old_data: Any) -> None:
    assert run("--verbosity", "0", "--dry-run") == ""
    normal = run("--dry-run")
    # a line per cleaner, the dry run's, then a line per kind archived
    assert normal.count("\n") == len(cleanup.CLEANERS) + 1 + len(archivers())
    assert run("--dry-run", "--no-archive").count("\n") == len(cleanup.CLEANERS) + 1
    assert "  counter 'old'" not in normal
    assert "  counter 'old'" in run("--dry-run", "--verbosity", "2")


def test_loop_runs_passes_until_told_to_stop(old_data: Any) -> None:
    output = run(
        "--loop", "--interval", "0.01", "--max-passes", "2", "--kind", "counter", "--verbosity", "2"
    )
    assert "pass 0: counter" in output
    assert "pass 1: counter" in output
    assert "Stopped after 2 passes." in output


def test_unreachable_redis_is_a_clear_error(settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": "redis://user:secret@127.0.0.1:1/0"}
    with pytest.raises(CommandError) as info:
        run()
    message = str(info.value)
    assert message.startswith(
        "Cannot clean metrics: Redis at 'redis://***@127.0.0.1:1/0' cannot be reached"
    )
    assert "secret" not in message


def test_unreachable_redis_exits_non_zero() -> None:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, "-m", "django", "clean_metrics"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert "Redis at 'redis://127.0.0.1:1/0' cannot be reached" in result.stderr
    assert "Traceback" not in result.stderr


def test_interval_and_max_passes_need_loop(single: Any) -> None:
    for option in (["--interval", "5"], ["--max-passes", "2"]):
        with pytest.raises(CommandError, match="only apply with --loop"):
            run(*option)


def test_unreachable_redis_cluster_is_a_clear_error(settings: Any) -> None:
    """redis-py's RedisClusterException is not a RedisError: it must not escape as a traceback."""
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": "redis://127.0.0.1:1/0",
        "CLUSTER": True,
        "SOCKET_CONNECT_TIMEOUT": 0.5,
    }
    with pytest.raises(CommandError, match="cannot be reached"):
        run()


class SharedOutput(StringIO):
    """Command output another thread can wait on."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()

    def write(self, text: str) -> int:
        with self.lock:
            return super().write(text)

    def text(self) -> str:
        with self.lock:
            return self.getvalue()


def wait_for(predicate: Any, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_loop_outlives_a_redis_restart(settings: Any) -> None:
    """A Redis blip in --loop mode is reported once and the loop goes on (it used to exit)."""
    server = RedisServer().start()
    try:
        settings.DJANGO_REDIS_METRICS = {
            "CONNECTION": server.url,
            "PREFIX": "blip",
            "SOCKET_CONNECT_TIMEOUT": 0.5,
            "SOCKET_TIMEOUT": 1,
        }
        Counter("hits", precisions=[1]).incr()
        out, err = SharedOutput(), SharedOutput()
        passes_seen = lambda: out.text().count(": counter:")  # noqa: E731
        # The command runs in a thread; this (main) thread owns the server, which dies with
        # the thread that started it.
        runner = threading.Thread(
            target=lambda: call_command(
                "clean_metrics",
                "--loop",
                "--interval",
                "0.05",
                "--max-passes",
                "200",
                "--kind",
                "counter",
                stdout=out,
                stderr=err,
            )
        )
        runner.start()
        try:
            wait_for(lambda: "pass 1: counter" in out.text())
            server.stop()
            wait_for(lambda: "failed" in err.text())
            time.sleep(0.3)  # a few more failed passes, silently
            server.start()
            wait_for(lambda: "answers again" in err.text())
            seen = passes_seen()
            wait_for(lambda: passes_seen() > seen)  # cleaning again after the outage
        finally:
            runner.join(120)
        errors = err.text()
        assert errors.count("failed") == 1, errors  # once per outage, not once per pass
        assert "retrying every 0.05 s" in errors
        assert "pass 199: counter" in out.text()
    finally:
        server.cleanup()


def test_sigterm_stops_the_loop_cleanly(single: Any) -> None:
    script = (
        "import django, sys\n"
        "django.setup()\n"
        "from django.conf import settings\n"
        f"settings.DJANGO_REDIS_METRICS = {{'CONNECTION': {single.url!r}, "
        f"'PREFIX': {single.prefix!r}}}\n"
        "from django.core.management import call_command\n"
        "call_command('clean_metrics', '--loop', '--interval', '30', '--kind', 'counter')\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "PYTHONPATH": str(ROOT),
        "PYTHONUNBUFFERED": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("pass 0: counter")
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=20)  # not the 30 s interval
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert "Stopped after 1 passes (SIGTERM)." in stdout
