"""A plain Python model of what the archive of sets must answer: sets of ids per period."""

from __future__ import annotations

import random
from collections import defaultdict

from django_redis_metrics.core.periods import Period, period_class

DAY = 86400


def bits_of(data: bytes) -> set[int]:
    """The ids whose bits are set in a bitmap's bytes (bit 0 is the first byte's highest)."""
    return {
        8 * at + bit for at, byte in enumerate(data) for bit in range(8) if byte & (0x80 >> bit)
    }


def marks(now: float, days: int, seed: int, ids: int = 300) -> list[tuple[int, float]]:
    """A reproducible list of ``(id, when)``: a few ids a day over the ``days`` days before
    ``now``'s day, never ahead of ``now``."""
    rng = random.Random(seed)
    out = []
    for back in range(days, 0, -1):
        for _ in range(rng.randint(1, 12)):
            out.append((rng.randrange(ids), now - back * DAY + rng.uniform(0, DAY - 1)))
    return [(user, min(when, now)) for user, when in out]


def by_period(pairs: list[tuple[int, float]], name: str, zone: str) -> dict[Period, set[int]]:
    """The ids of each period of ``name`` (in ``zone``)."""
    found: dict[Period, set[int]] = defaultdict(set)
    for user, when in pairs:
        found[period_class(name).containing(when, zone)].add(user)
    return dict(found)
