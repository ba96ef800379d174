"""The batched counter cleaner: many counters per round trip and per script call, each call's
work bounded, the same result as a plain model of retention, race-free, dry runs read-only."""

from __future__ import annotations

import random
import threading
from collections import Counter as Tally

import pytest

from django_redis_metrics import Counter
from django_redis_metrics.core.batch import run_calls
from django_redis_metrics.counter import cleaner as cleaner_module
from django_redis_metrics.counter.cleaner import CALL_COUNTERS, clean_counters

from ..racing import race

T = 1_700_000_040  # a multiple of 60; long before the Redis clock, so heads follow the writes
PRECISIONS = (1, 5, 60)
SAMPLES = 10


def model(writes: list[tuple[int, int]], now: float) -> dict[int, list[tuple[int, int]]]:
    """Per precision, the slices a counter holds after ``writes`` (when, amount) and a cleaning
    pass at ``now``: writes keep the newest ``SAMPLES`` slices up to the newest written, the
    cleaner those starting after ``now - SAMPLES * precision``."""
    kept = {}
    for precision in PRECISIONS:
        slices: Tally[int] = Tally()
        for when, amount in writes:
            slices[when // precision * precision] += amount
        head = max(slices)
        floor = max(head - SAMPLES * precision, now - SAMPLES * precision)
        kept[precision] = sorted((s, c) for s, c in slices.items() if s > floor)
    return kept


def population(count: int, seed: int) -> dict[str, list[tuple[int, int]]]:
    """Counters with random histories: busy up to T, stopped a while before, or long stopped
    (every slice falls out: they are retired)."""
    rng = random.Random(seed)
    histories = {}
    for index in range(count):
        end = T - rng.choice([0, 0, 7, 30, 200, 5000])
        histories[f"c{index:03}"] = [
            (end - rng.randrange(120), rng.randint(1, 5)) for _ in range(40)
        ]
    return histories


def counter(name: str) -> Counter:
    return Counter(name, precisions=PRECISIONS, samples=SAMPLES)


@pytest.mark.parametrize("field_budget", [2000, 25, 4])
def test_a_pass_over_many_batches_cleans_every_counter_as_the_model_says(backend, field_budget):
    """More counters than a page (``batch_size``) and than a script call (``CALL_COUNTERS``);
    budgets that end calls early (the rest sent again) or leave whole precisions to HSCAN."""
    histories = population(CALL_COUNTERS + 37, seed=field_budget)
    for name, writes in histories.items():
        counter(name).incr_many(writes)
    now = T + 0.5
    expected = {name: model(writes, now) for name, writes in histories.items()}
    report = clean_counters(now=now, batch_size=60, field_budget=field_budget)

    retired = sorted(name for name, kept in expected.items() if not any(kept.values()))
    assert 0 < len(retired) < len(histories)
    assert sorted(report.metrics_removed) == retired
    assert report.metrics_checked == len(histories)
    assert sorted(Counter.objects.names()) == sorted(set(histories) - set(retired))
    for name, kept in expected.items():
        assert counter(name).exists() == (name not in retired), name
        for precision in PRECISIONS:
            assert counter(name).series(precision) == kept[precision], (name, precision)
    written = {
        name: model(writes, float("-inf")) for name, writes in histories.items()
    }  # what writes alone kept
    assert report.items_removed == sum(
        len(written[name][p]) - len(expected[name][p]) for name in histories for p in PRECISIONS
    )
    assert not [key for key in backend.keys() if any(f"{{{name}}}" in key for name in retired)]
    again = clean_counters(now=now, batch_size=60, field_budget=field_budget)
    assert (again.items_removed, again.metrics_removed) == (0, [])


def test_a_pass_later_removes_only_what_fell_out_since(backend):
    """The cleaner remembers how far it went; what a later pass removes is still exact."""
    histories = population(40, seed=7)
    for name, writes in histories.items():
        counter(name).incr_many(writes)
    for now in (T - 50.5, T + 0.5, T + 3.5, T + 61, T + 400):
        clean_counters(now=now, batch_size=15)
        for name, writes in histories.items():
            kept = model(writes, now)
            if any(kept.values()):
                assert [counter(name).series(p) for p in PRECISIONS] == list(kept.values())
            else:
                assert not counter(name).exists()


@pytest.mark.parametrize("field_budget", [2000, 4])
def test_dry_run_over_many_batches_writes_nothing_and_tells_the_truth(backend, field_budget):
    histories = population(CALL_COUNTERS + 11, seed=3)
    for name, writes in histories.items():
        counter(name).incr_many(writes)
    snapshot = {
        key: (backend.client.dump(key), backend.client.pttl(key) > 0) for key in backend.keys()
    }
    dry = clean_counters(now=T + 0.5, dry_run=True, batch_size=40, field_budget=field_budget)
    after = {
        key: (backend.client.dump(key), backend.client.pttl(key) > 0) for key in backend.keys()
    }
    assert after == snapshot
    real = clean_counters(now=T + 0.5, batch_size=40, field_budget=field_budget)
    assert dry.items_removed == real.items_removed > 0
    assert sorted(dry.metrics_removed) == sorted(real.metrics_removed) != []
    assert dry.metrics_checked == real.metrics_checked == len(histories)


def test_writers_racing_the_batched_cleaner_lose_nothing(backend):
    """Many counters in few script calls: each writer gives its counters an old write (which
    the cleaner trims, making the counter a candidate for retirement) and then increments
    that must be kept, again and again, while the cleaner passes with tiny batches and budgets.
    Every increment at T is found in the end and every counter holding one is listed."""
    writers, per_writer, rounds = 4, 25, 3
    totals: dict[str, int] = {}
    lock = threading.Lock()

    def write(seed: int) -> None:
        rng = random.Random(seed)
        for index in range(per_writer):
            name = f"w{seed}-{index}"
            for _ in range(rounds):
                counter(name).incr(when=T - 5000)
                amount = rng.randint(1, 9)
                counter(name).incr(amount, when=T)
                with lock:
                    totals[name] = totals.get(name, 0) + amount

    def clean() -> None:
        clean_counters(now=T + 0.5, batch_size=7, field_budget=3)

    race([lambda seed=seed: write(seed) for seed in range(writers)], clean)
    clean_counters(now=T + 0.5)
    assert sorted(Counter.objects.names()) == sorted(totals)
    for name, total in totals.items():
        for precision in PRECISIONS:
            assert counter(name).series(precision) == [(T // precision * precision, total)]


def test_a_counter_written_between_passes_is_never_retired(backend):
    """A counter emptied by the cleaner and written again before the next pass keeps its new
    data and its catalogue entry, on both backends (the catalogue step differs)."""
    names = [f"again{i}" for i in range(CALL_COUNTERS + 5)]
    for name in names:
        counter(name).incr(when=T - 5000)
    assert len(clean_counters(now=T).metrics_removed) == len(names)
    for name in names[::2]:
        counter(name).incr(3, when=T)
    report = clean_counters(now=T)
    assert report.metrics_removed == []
    assert sorted(Counter.objects.names()) == sorted(names[::2])
    for name in names[::2]:
        assert counter(name).series(60) == [(T, 3)]
        assert backend.client.pttl(counter(name).key(1)) > 0


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"field_budget": 0}, ValueError),
        ({"batch_size": -1}, ValueError),
        ({"now": "x"}, TypeError),
    ],
)
def test_bad_options_are_refused_before_anything_is_cleaned(backend, options, error):
    counter("old").incr(when=T - 5000)
    before = {key: backend.client.dump(key) for key in backend.keys()}
    with pytest.raises(error):
        clean_counters(**options)
    assert {key: backend.client.dump(key) for key in backend.keys()} == before


def test_a_call_always_finishes_a_counter_even_when_its_work_recurs(backend, monkeypatch):
    """Hashes a pass cannot mark as checked (slices an earlier version left below the window,
    a ``now`` before the head) are read again by every call: with a budget smaller than their
    sum, each call still finishes its first counter (what does not fit goes to HSCAN), so the
    pass ends."""
    names = ["stuck-a", "stuck-b"]
    for name in names:
        stuck = Counter(name, precisions=[1, 5], samples=10)
        stuck.incr(when=T)
        backend.client.hset(stuck.key(1), T - 12, 1)  # below the window, after the cutoff
        backend.client.hset(stuck.key(5), T - 52, 1)
    rounds = []

    def counted(*args, **kwargs):
        rounds.append(1)
        if len(rounds) > 20:
            raise AssertionError("the pass sends the same counters again and again")
        return run_calls(*args, **kwargs)

    monkeypatch.setattr(cleaner_module, "run_calls", counted)
    report = clean_counters(now=T - 5, field_budget=3)
    assert (report.items_removed, report.metrics_removed) == (0, [])
    assert sorted(Counter.objects.names()) == names
