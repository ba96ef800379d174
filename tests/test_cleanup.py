"""clean_counters and ``manage.py clean_metrics``: trimming, dry runs, output, the daemon loop."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from django_redis_metrics import Counter
from django_redis_metrics.cleanup import run_loop
from django_redis_metrics.core.cleaning import due
from django_redis_metrics.counter.cleaner import clean_counters

# clean_metrics archives into the database after each pass (docs/history.md).
pytestmark = pytest.mark.django_db(transaction=True)

T = 1_700_000_040


def test_cadence_follows_the_seed():
    assert [p for p in (1, 5, 60, 300, 3600, 86400) if due(p, passes=0)] == [
        1,
        5,
        60,
        300,
        3600,
        86400,
    ]
    assert [p for p in (1, 5, 60, 300, 3600, 86400) if due(p, passes=1)] == [1, 5, 60]
    assert [p for p in (1, 5, 60, 300, 3600, 86400) if due(p, passes=5)] == [1, 5, 60, 300]


def test_keeps_exactly_the_newest_samples_before_now(backend):
    """Writes keep the newest samples before the newest slice; the cleaner, before now: it
    trims a counter nobody writes any more."""
    counter = Counter("kept", precisions=[5], samples=10)
    counter.incr_many((T - 5 * i, 1) for i in range(10))
    report = clean_counters(now=T + 2 + 30)  # six slices later
    assert [start for start, _ in counter.series(5)] == [T - 15, T - 10, T - 5, T]
    assert report.items_removed == 6
    assert report.metrics_removed == []


def legacy_hash(client, counter: Counter, precision: int, starts) -> str:
    """A precision hash as a version without write-time retention left it: every slice ever
    written, far more than its samples (written straight to Redis, in chunks)."""
    counter.incr(when=T)  # the meta hash, the catalogue
    key = counter.key(precision)
    starts = list(starts)
    for index in range(0, len(starts), 1000):
        client.hset(key, mapping=dict.fromkeys(starts[index : index + 1000], 1))
    return key


def test_trims_huge_hashes_in_bounded_batches(single):
    counter = Counter("huge", precisions=[1], samples=10)
    legacy_hash(single.client, counter, 1, (T - i for i in range(20_000)))
    before = single.client.info("commandstats").get("cmdstat_hdel", {}).get("calls", 0)
    report = clean_counters(now=T, batch_size=500)
    after = single.client.info("commandstats")["cmdstat_hdel"]["calls"]
    assert report.items_removed == 20_000 - 10
    assert after - before == 40  # 19,990 fields, at most 500 per HDEL
    assert len(counter.series(1)) == 10


def test_a_hash_that_shrank_is_compacted_so_its_memory_returns(single):
    """Redis never converts a trimmed hash back to its compact encoding: the cleaner rewrites
    it (a hash left by a version without write-time retention, or by a bigger ``samples``)."""
    counter = Counter("grown", precisions=[1], samples=120)
    key = legacy_hash(single.client, counter, 1, (T - i for i in range(86_400)))
    grown = single.client.memory_usage(key, samples=0)
    assert single.client.object("encoding", key) == b"hashtable"
    report = clean_counters(now=T, batch_size=500)
    assert single.client.hlen(key) == 120
    assert single.client.object("encoding", key) == b"listpack"
    assert single.client.memory_usage(key, samples=0) < grown / 100
    assert "counter 'grown' precision 1s: compacted" in report.details
    assert counter.series(1) == [(T - 119 + i, 1) for i in range(120)]
    assert single.client.ttl(key) > 0


def test_dry_run_changes_nothing(backend):
    Counter("old", precisions=[1], samples=2).incr(when=T - 100)
    Counter("new", precisions=[1], samples=2).incr(when=T)
    snapshot = {k: backend.client.dump(k) for k in backend.keys()}
    report = clean_counters(now=T, dry_run=True)
    assert report.items_removed == 1
    assert report.metrics_removed == ["old"]
    assert {k: backend.client.dump(k) for k in backend.keys()} == snapshot


def test_command_one_pass_with_summary_and_details(backend):
    Counter("old", precisions=[1], samples=2).incr(when=1_000)
    Counter("new").incr()
    out = StringIO()
    call_command("clean_metrics", "--kind", "counter", verbosity=2, stdout=out)
    text = out.getvalue()
    assert "counter: checked 2, removed 1 old entries and 1 empty metrics" in text
    assert "counter 'old' precision 1s: 1 slices" in text
    assert "counter 'old': empty, removed from the catalogue" in text
    assert Counter.objects.names() == ["new"]


def test_command_dry_run_and_quiet_output(backend):
    Counter("old", precisions=[1], samples=2).incr(when=1_000)
    out = StringIO()
    call_command("clean_metrics", "--dry-run", "--kind", "counter", verbosity=1, stdout=out)
    assert "would remove 1 old entries and 1 empty metrics" in out.getvalue()
    assert "precision 1s" not in out.getvalue()
    assert Counter.objects.names() == ["old"]
    out = StringIO()
    call_command("clean_metrics", "--kind", "counter", verbosity=0, stdout=out)
    assert out.getvalue() == ""
    assert Counter.objects.names() == []


def test_command_loop_runs_passes_until_told_to_stop(backend):
    Counter("old", precisions=[1], samples=2).incr(when=1_000)
    out = StringIO()
    call_command(
        "clean_metrics",
        "--loop",
        "--interval",
        "0.01",
        "--max-passes",
        "3",
        "--kind",
        "counter",
        stdout=out,
    )
    lines = [line for line in out.getvalue().splitlines() if line.startswith("pass")]
    lines = [line for line in lines if ": archive: " not in line]
    assert [line.split(":")[0] for line in lines] == ["pass 0", "pass 1", "pass 2"]
    assert "1 empty metrics" in lines[0] and "0 empty metrics" in lines[1]


def test_loop_sleeps_the_rest_of_the_interval():
    slept: list[float] = []
    passes = run_loop(
        lambda passes, reports: None, interval=60, max_passes=3, kinds=[], sleep=slept.append
    )
    assert passes == 3
    assert len(slept) == 2 and all(59 < s <= 60 for s in slept)


def test_command_fails_clearly_when_redis_is_unreachable(settings):
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": "redis://127.0.0.1:1/0",
        "SOCKET_CONNECT_TIMEOUT": 0.2,
        "PREFIX": "x",
    }
    with pytest.raises(
        CommandError, match=r"Cannot clean metrics: Redis at 'redis://127\.0\.0\.1:1/0'"
    ):
        call_command("clean_metrics", stdout=StringIO())


def test_command_refuses_a_bad_interval(single):
    with pytest.raises(CommandError, match="--interval must be a positive"):
        call_command("clean_metrics", "--loop", "--interval", "0", stdout=StringIO())
