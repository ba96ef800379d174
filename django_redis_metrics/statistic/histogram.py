"""A statistic's slice: its text in Redis, and the log-scale histogram that gives its quantiles.

A value ``v`` other than 0 falls in the bucket ``k = ceil(8 · log2 |v|)``, the range
``(g^(k-1), g^k]`` of magnitudes with ``g = 2^(1/8)`` (eight buckets per doubling), signed
like ``v``; 0 has a bucket of its own. A quantile is read as the bucket holding its rank,
estimated at ``2g^k / (g + 1)`` and clamped to the slice's exact min and max: within
:data:`RELATIVE_ERROR` ``= (g - 1) / (g + 1)`` (4.33 %) of the exact value, for any value from
the tiniest float to 2**53 (the ``DDSketch`` construction: Masson, Rim and Lee, *DDSketch: a
fast and fully-mergeable quantile sketch with relative-error guarantees*, VLDB 2019).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

#: Buckets per doubling of the magnitude.
PER_DOUBLING = 8
GAMMA = 2 ** (1 / PER_DOUBLING)
#: The largest relative error of a quantile read from the histogram (about 4.33 %).
RELATIVE_ERROR = (GAMMA - 1) / (GAMMA + 1)
#: Added to ``k`` so that every bucket of a value other than 0 is at least 1 in magnitude
#: (``k`` reaches -8592 for the tiniest float) and buckets sort like their values.
OFFSET = 9000
#: The quantiles ``summary()`` gives, by name.
QUANTILES: Mapping[str, float] = {"p50": 0.5, "p95": 0.95, "p99": 0.99}

Summary = dict[str, Any]


def bucket(value: float) -> int:
    """The histogram bucket of ``value`` (0 for 0; negative values get negative buckets)."""
    if value == 0:
        return 0
    k = math.ceil(PER_DOUBLING * math.log2(abs(value)))
    return int(math.copysign(k + OFFSET, value))


def calls(numbers: Iterable[float], max_values: int, max_buckets: int) -> list[list[float]]:
    """``numbers`` sorted, then cut into runs of at most ``max_values`` values falling in at
    most ``max_buckets`` distinct buckets: what one script call adds, so that its time stays
    bounded whatever the values (it grows with the buckets a call touches). Sorted, values of
    a bucket are neighbours, so a run fills with values rather than buckets: few calls. Adding
    the runs one after the other gives the very slice one call of the sorted values would (the
    same additions in the same order)."""
    runs: list[list[float]] = []
    run: list[float] = []
    seen: set[int] = set()
    for number in sorted(numbers):
        index = bucket(number)
        if len(run) == max_values or (index not in seen and len(seen) == max_buckets):
            runs.append(run)
            run, seen = [], set()
        run.append(number)
        seen.add(index)
    if run:
        runs.append(run)
    return runs


def estimate(index: int) -> float:
    """The value a bucket stands for: the point of its range with the least relative error."""
    if index == 0:
        return 0.0
    k = abs(index) - OFFSET
    return math.copysign(2 * GAMMA**k / (GAMMA + 1), index)


def rank(q: float, count: int) -> int:
    """The 1-based rank of the ``q``-quantile among ``count`` sorted values (nearest rank:
    the smallest value with at least ``q · count`` values at or below it)."""
    return min(max(math.ceil(q * count), 1), count)


def empty() -> Summary:
    """The summary of a slice holding nothing: count 0, every other figure ``None``."""
    return {"count": 0, "sum": None, "min": None, "max": None, "mean": None, "stddev": None} | {
        name: None for name in QUANTILES
    }


@dataclass(frozen=True)
class Slice:
    """A slice as stored: ``m2`` is the sum of squared deviations from the mean, ``buckets``
    the ``(bucket, count)`` pairs holding values, sorted like the values."""

    count: int
    total: float
    m2: float
    low: float
    high: float
    buckets: list[tuple[int, int]]

    @classmethod
    def from_text(cls, text: bytes | str) -> Slice:
        """A slice from its text in Redis: ``count,sum,m2,min,max,buckets;bucket:count...``."""
        if isinstance(text, bytes):
            text = text.decode()
        head, *cells = text.split(";")
        count, total, m2, low, high, _ = head.split(",")
        buckets = sorted((int(b), int(n)) for b, n in (cell.split(":") for cell in cells))
        return cls(int(count), float(total), float(m2), float(low), float(high), buckets)

    def quantile(self, q: float) -> float:
        """The ``q``-quantile (nearest rank), read from the histogram, clamped to min and max."""
        wanted, seen = rank(q, self.count), 0
        for index, number in self.buckets:
            seen += number
            if seen >= wanted:
                return min(max(estimate(index), self.low), self.high)
        return self.high  # the buckets hold fewer than `count` values: a slice cut short


def parse(text: bytes | str | None) -> Summary:
    """A slice's summary from its text in Redis (``None``: an empty slice)."""
    return empty() if text is None else summarize(Slice.from_text(text))


def summarize(found: Slice) -> Summary:
    """``summary()``'s dict of a slice (or of several merged by :func:`merge`)."""
    count = found.count
    summary: Summary = {
        "count": count,
        "sum": found.total,
        "min": found.low,
        "max": found.high,
        "mean": found.total / count,
        "stddev": math.sqrt(max(found.m2, 0.0) / (count - 1)) if count > 1 else None,
    }
    for name, q in QUANTILES.items():
        summary[name] = found.quantile(q)
    return summary


def merge(slices: Iterable[Slice]) -> Slice | None:
    """The slices as one (``None`` if none holds a value): counts and sums added, the
    squared deviations combined by Chan, Golub and LeVeque's pairwise update, min of the
    mins, max of the maxes, histograms added bucket by bucket. Quantiles of the merged slice
    keep the same relative error bound (the histogram is mergeable by construction)."""
    count, total, m2 = 0, 0.0, 0.0
    low, high = math.inf, -math.inf
    buckets: dict[int, int] = {}
    for part in slices:
        if part.count <= 0:
            continue
        if count:
            delta = part.total / part.count - total / count
            m2 += part.m2 + delta * delta * count * part.count / (count + part.count)
        else:
            m2 = part.m2
        count += part.count
        total += part.total
        low, high = min(low, part.low), max(high, part.high)
        for index, number in part.buckets:
            buckets[index] = buckets.get(index, 0) + number
    if not count:
        return None
    return Slice(count, total, m2, low, high, sorted(buckets.items()))


def parse_merged(texts: Iterable[bytes | str | None]) -> Summary:
    """The summary of several slices read from Redis taken as one (``None`` texts are empty
    slices): what a window of many slices, such as the last 60 minutes, held."""
    merged = merge(Slice.from_text(text) for text in texts if text is not None)
    return empty() if merged is None else summarize(merged)


def quantile_of(text: bytes | str | None, q: float) -> float | None:
    """The ``q``-quantile of a slice from its text in Redis (``None``: an empty slice)."""
    return None if text is None else Slice.from_text(text).quantile(q)


def parse_merged_slices(slices: Iterable[Slice]) -> Summary:
    """The summary of several slices taken as one (``empty()`` if none holds a value)."""
    merged = merge(slices)
    return empty() if merged is None else summarize(merged)
