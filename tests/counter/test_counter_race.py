"""Writers racing a looping cleaner: no increment lost, no counter with data unlisted."""

from __future__ import annotations

import random
import threading
import time

from django_redis_metrics import Counter
from django_redis_metrics.counter.cleaner import clean_counters

T = 1_700_000_040  # a multiple of 60
OLD = T - 4000  # beyond the cutoff of every precision below
WRITERS = 4
COUNTERS_PER_WRITER = 30


def counter(name: str) -> Counter:
    # 30 samples: the 1 s hash keeps its TTL (31 s) for the whole test
    return Counter(name, precisions=[1, 60], samples=30)


def test_writers_racing_the_cleaner_lose_nothing(backend):
    """Each counter gets one old write; the writer waits until the cleaner has trimmed it (the
    counter is now a candidate for retirement) and at once, usually, writes data that must be
    kept, aiming at the cleaner's emptiness check. A cleaner that retires with a check-then-act
    race unlists some of these counters for good; this one must not."""
    kept: dict[str, int] = {}
    stop = threading.Event()
    errors: list[BaseException] = []
    passes = 0

    def cleaner() -> None:
        nonlocal passes
        try:
            while not stop.is_set():
                clean_counters(now=T + 0.5)
                passes += 1
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def writer(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for index in range(COUNTERS_PER_WRITER):
                name = f"race{seed}-{index}"
                counter(name).incr(when=OLD)
                keys = [counter(name).key(p) for p in (1, 60)]
                deadline = time.monotonic() + 5
                while backend.client.exists(*keys) and time.monotonic() < deadline:
                    pass
                if rng.random() < 0.7:
                    amount = rng.randint(1, 9)
                    counter(name).incr(amount, when=T)
                    kept[name] = amount
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=cleaner)]
    threads += [threading.Thread(target=writer, args=(seed,)) for seed in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads[1:]:
        thread.join()
    stop.set()
    threads[0].join()
    assert not errors, errors
    assert passes > 5, "the cleaner should have run many passes while writers wrote"

    clean_counters(now=T + 0.5)  # a final pass trims the last old writes
    listed = set(Counter.objects.names())
    unlisted = sorted(name for name in kept if name not in listed)
    assert unlisted == [], f"{len(unlisted)} counters hold data but were unlisted"
    for name, amount in kept.items():
        assert counter(name).exists()
        assert counter(name).series(1) == [(T, amount)]
        assert counter(name).series(60) == [(T, amount)]
    empty = {f"race{s}-{i}" for s in range(WRITERS) for i in range(COUNTERS_PER_WRITER)} - set(kept)
    assert not empty & listed
    assert not [name for name in empty if counter(name).exists()]
