"""A steady cleaning pass costs O(the app's keys), not O(the database's): every temporary key is
written with its TTL, so the stray-key sweep (a SCAN of every key) runs once per database, for
what an earlier version may have left, and again only when asked (``--sweep-temporary``)."""

from __future__ import annotations

import time
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from django_redis_metrics import Counter, UniqueBitmap
from django_redis_metrics.cleanup import clean_all
from django_redis_metrics.core.cleaning import (
    STRAY_TEMP_TTL,
    clean_temporary,
    forget_sweep,
    sweep_marker_key,
)
from django_redis_metrics.core.connection import is_cluster
from django_redis_metrics.core.keys import temp_key

FOREIGN = 6000


def _nodes(client: Any) -> list[Any]:
    if is_cluster(client):
        return [node.redis_connection for node in client.get_primaries()]
    return [client]


def _calls(client: Any) -> dict[str, int]:
    """Calls per command, summed over every master (``INFO commandstats``)."""
    total: dict[str, int] = {}
    for node in _nodes(client):
        for name, stats in node.info("commandstats").items():
            total[name] = total.get(name, 0) + int(stats["calls"])
    return total


def _delta(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


def _foreign(backend: Any, count: int) -> list[str]:
    """``count`` keys of another application, none of them under this test's prefix."""
    keys = [f"other-app:{backend.prefix}:{{{n}}}" for n in range(count)]
    pipe = backend.client.pipeline(transaction=False)
    for key in keys:
        pipe.set(key, b"x")
    pipe.execute()
    return keys


def _drop(backend: Any, keys: list[str]) -> None:
    pipe = backend.client.pipeline(transaction=False)
    for key in keys:
        pipe.delete(key)
    pipe.execute()


def _in_one_minute(needed: float = 30.0) -> None:
    """Sleep into the next minute unless ``needed`` seconds of this one are left: passes
    compared with each other must not straddle a minute's turn, where one of them trims the
    slice that fell out of a counter of 1-minute slices (a day's bitmap at midnight)."""
    left = 60 - time.time() % 60
    if left < needed:
        time.sleep(left + 0.1)


def test_a_steady_pass_does_not_read_a_database_full_of_foreign_keys(backend):
    for n in range(5):
        Counter(f"c{n}", precisions=[60]).incr()
    UniqueBitmap("users", periods=("day",)).mark(1)
    foreign = _foreign(backend, FOREIGN)
    try:
        first = clean_all()  # the sweep, and whatever a first pass finds to do
        assert {r.kind: r.note for r in first}["temporary"].startswith("swept the database")
        _in_one_minute()
        clean_all()  # what this minute brings, done before the passes compared
        before = _calls(backend.client)
        reports = clean_all()
        spent = _delta(before, _calls(backend.client))
        assert {r.kind: r.note for r in reports}["temporary"].startswith("swept already")
        # No SCAN, no KEYS, no RANDOMKEY: nothing that walks the keyspace.
        assert not {k for k in spent if k.split("|")[0] in ("cmdstat_scan", "cmdstat_keys")}
        # And what a pass sends does not grow with the foreign keys: the same as without them.
        _drop(backend, foreign)
        foreign = []
        before = _calls(backend.client)
        clean_all()
        assert _delta(before, _calls(backend.client)) == spent
    finally:
        _drop(backend, foreign)


def test_the_first_pass_sweeps_what_an_earlier_version_left(backend):
    """A database without the marker (an earlier version's) is swept once, on every master."""
    strays = [temp_key("bitmap", f"b{n}", "crashed") for n in range(6)]  # several slots
    for key in strays:
        backend.client.set(key, b"\x01")
    before = _calls(backend.client)
    report = clean_temporary()
    assert _delta(before, _calls(backend.client)).get("cmdstat_scan", 0) >= len(
        _nodes(backend.client)
    )
    assert report.items_removed == len(strays)
    for key in strays:
        assert 0 < backend.client.ttl(key) <= STRAY_TEMP_TTL
    assert backend.client.get(sweep_marker_key()) == b"1"
    # Swept: a later stray (which this version never makes) waits for a sweep asked for.
    late = temp_key("bitmap", "late", "crashed")
    backend.client.set(late, b"\x01")
    assert clean_temporary().items_removed == 0
    assert backend.client.ttl(late) == -1
    forget_sweep()
    assert clean_temporary().items_removed == 1
    assert 0 < backend.client.ttl(late) <= STRAY_TEMP_TTL


def test_a_dry_run_sweeps_but_leaves_the_marker_unset(backend):
    stray = temp_key("bitmap", "b", "crashed")
    backend.client.set(stray, b"\x01")
    assert clean_temporary(dry_run=True).items_removed == 1
    assert backend.client.ttl(stray) == -1
    assert backend.client.get(sweep_marker_key()) is None
    assert clean_temporary().items_removed == 1


# clean_metrics archives too: a pass writes to the database.
@pytest.mark.django_db(transaction=True)
def test_the_command_sweeps_again_when_asked(single):
    clean_temporary()
    stray = temp_key("bitmap", "b", "crashed")
    single.client.set(stray, b"\x01")
    call_command("clean_metrics", stdout=StringIO())
    assert single.client.ttl(stray) == -1
    out = StringIO()
    call_command("clean_metrics", "--sweep-temporary", stdout=out)
    assert 0 < single.client.ttl(stray) <= STRAY_TEMP_TTL
    assert "temporary: swept the database" in out.getvalue()
