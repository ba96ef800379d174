"""Sharded metrics: one hot metric spread over several keys, on several Redis Cluster slots.

Every key of one metric shares its hash tag, so one metric lives on one slot, hence on one
Redis node: a counter written faster than one node can take needs its increments spread. A
counter declared with ``shards=N`` writes each increment to one of ``N`` *shards*, hidden series
of the counter named like a labelled metric's series (``core/labels/labelling.py``) with the
reserved label ``__shard__``::

    hits\\x1f__shard__=0 ... hits\\x1f__shard__=<N-1>

Each shard has its own keys and hash tag (so its own slot), its own meta hash, TTL and
retention, and is listed in the kind's catalogue like a series: the cleaner trims it, the
metric's ``delete()`` deletes it, and every read of the metric adds its shards as it adds a
labelled metric's series (``core/labels/aggregate.py``), in one round trip per node when the
reader knows ``N`` (a declared metric). A shard is picked at random for each direct write (a
write is one script call on one shard: atomic, one round trip), and per process for a deferred
one (the sender merges a process's increments): racing writers spread evenly, the sum exact.
Shards are not labels: no ``max_series`` admission, and a metric may not have both
(``labels=`` and ``shards=`` are refused together).
"""

from __future__ import annotations

import os
import random
from typing import TYPE_CHECKING, TypeVar

from .validation import integer

if TYPE_CHECKING:
    from .base import Metric

M = TypeVar("M", bound="Metric")

#: The reserved label naming a shard in its series name (label names starting with ``__`` can
#: never be declared, so no labelled series is ever taken for a shard).
SHARD_LABEL = "__shard__"
#: Most shards of one metric. Each is a full set of keys (a counter's meta hash and one hash
#: per precision, about 17 KB with the default 7 precisions of 120 samples), and a read of the
#: metric reads every shard: 64 shards make a read 64 times the work of an unsharded one,
#: while spreading writes over more slots than any but the largest clusters have nodes.
MAX_SHARDS = 64


def validate_shards(value: object, labels: tuple[str, ...], what: str) -> int:
    """``shards=`` of ``what``: an int in ``[1, MAX_SHARDS]``, refused on a labelled metric."""
    count = integer(value, f"shards of {what}", minimum=1, maximum=MAX_SHARDS)
    if count > 1 and labels:
        raise ValueError(
            f"{what} is labelled by {labels!r}: a labelled metric already spreads over one "
            "slot per series, so it cannot also declare shards; shard an unlabelled metric."
        )
    return count


def shard_pairs(index: int) -> tuple[tuple[str, str], ...]:
    """The label pairs naming shard ``index`` of a metric."""
    return ((SHARD_LABEL, str(index)),)


def is_shard(metric: Metric) -> bool:
    """Whether ``metric`` is a shard of a sharded metric (not a metric nor a labelled series)."""
    pairs = metric.label_pairs
    return metric.family is not None and len(pairs) == 1 and pairs[0][0] == SHARD_LABEL


def shard_count(metric: Metric) -> int:
    """The shards ``metric`` was declared with (1 for every unsharded metric)."""
    return int(getattr(metric, "shards", 1))


def shards_of(metric: M) -> list[M]:
    """Every shard of ``metric`` as declared (none for an unsharded metric or a series)."""
    count = shard_count(metric)
    if metric.family is not None or count < 2:
        return []
    return [metric.series_for(shard_pairs(index)) for index in range(count)]


def write_target(metric: M, *, deferred: bool = False) -> M:
    """Where one write of ``metric`` goes: ``metric`` itself when it is not sharded, else a
    shard: picked at random for each direct write (so one process's writes spread too), and
    per process for a deferred one (``defer=True``), so that the sender, which adds up a
    process's increments of one metric before it writes, still merges them into one write
    while the processes spread over the shards."""
    count = shard_count(metric)
    if metric.family is not None or count < 2:
        return metric
    index = _process_shard(count) if deferred else random.randrange(count)
    return metric.series_for(shard_pairs(index))


def _process_shard(count: int) -> int:
    """This process's shard among ``count``: its pid, mixed (Knuth's multiplicative hash), so
    that neighbouring pids land on different shards."""
    return (os.getpid() * 2654435761 % 2**32) % count
