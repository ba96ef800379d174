"""What a request records, collected off Redis, and merged into one batch for many requests.

Hits on the same counter in the same second are summed into one increment; a user marked twice
in the same local hour is marked once; the values of one statistic in the same second go in one
script call. A
metric is given by name (configured by the settings' defaults) or as a declared
``Counter``/``UniqueBitmap``/``Statistic``, whose precisions or periods are used, or as a
series of a labelled one (``metric.labels(...)``).

A declared metric or series merges with itself only (by identity): the middleware keeps its
series on its ``RequestPlan``, so the hits of one view and status class in one second are one
increment whatever the number of requests. The series of a batch that this process has not
admitted yet (``core/labels/admission.py``) are admitted together first, in one round trip.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..bitmaps import UniqueBitmap
from ..core.batch import Batch
from ..core.connection import REDIS_ERRORS
from ..core.labels.admission import admit_all
from ..core.periods import get_zone
from ..counter import Counter
from ..statistic import Statistic
from .reporting import report_data_error

Deferred = Callable[[Batch], None]


@dataclass
class Writes:
    """What one request (or one decorated view call) records, not yet sent.

    A metric is given by name (configured by the settings' defaults) or as a declared
    ``Counter``/``UniqueBitmap``, whose precisions or periods are then used.
    """

    hits: list[tuple[str | Counter, int]] = field(default_factory=list)
    marks: list[tuple[str | UniqueBitmap, Any, float]] = field(default_factory=list)
    records: list[tuple[str | Statistic, float, float]] = field(default_factory=list)
    deferred: list[tuple[str, Deferred]] = field(default_factory=list)

    def incr(self, counter: str | Counter, count: int = 1) -> None:
        self.hits.append((counter, count))

    def mark(self, bitmap: str | UniqueBitmap, user_id: Any, when: float | None = None) -> None:
        self.marks.append((bitmap, user_id, time.time() if when is None else when))

    def record(self, statistic: str | Statistic, value: float, when: float | None = None) -> None:
        self.records.append((statistic, value, time.time() if when is None else when))

    def defer(self, write: Deferred, label: str = "") -> None:
        """Queue ``write(batch)``: any model write made with ``batch=batch``; ``label`` (the
        metric's name) names it in logs."""
        self.deferred.append((label or getattr(write, "__qualname__", "a write"), write))

    def __bool__(self) -> bool:
        return bool(self.hits or self.marks or self.records or self.deferred)


@dataclass
class Submission:
    writes: Writes
    second: int


def _local_hour(when: float, zone: Any) -> int:
    """The start of the local hour holding ``when``: marks in the same local hour set the same
    bits in every period (an hour never straddles a local day, even in half-hour zones)."""
    start = datetime.fromtimestamp(when, zone).replace(minute=0, second=0, microsecond=0)
    return int(start.timestamp())


def build_batch(submissions: list[Submission]) -> Batch:
    """One batch for many submissions: hits summed per (counter, second), marks deduplicated
    per (bitmap, user, local hour), a statistic's values joined per second.

    A Redis error while preparing (a first-seen str user id on Redis Cluster is mapped first)
    propagates: the sender keeps the writes for later. Any other error drops only that write
    (logged, rate-limited).
    """
    batch = Batch(joins=False)
    hits: dict[tuple[str | int, int], tuple[str | Counter, int]] = {}
    marks: dict[tuple[str | int, Any, int], tuple[str | UniqueBitmap, float]] = {}
    zone = get_zone() if any(item.writes.marks for item in submissions) else None
    for item in submissions:
        for counter, count in item.writes.hits:
            key = (_merge_key(counter), item.second)
            hits[key] = (counter, hits[key][1] + count if key in hits else count)
        for bitmap, user_id, when in item.writes.marks:
            marks[(_merge_key(bitmap), user_id, _local_hour(when, zone))] = (bitmap, when)
    writes: list[tuple[str, Deferred]] = []
    for (_counter, second), (counter, count) in hits.items():
        writes.append((_name(counter), _incr(counter, count, second)))
    for (_bitmap, user_id, _hour), (bitmap, when) in marks.items():
        writes.append((_name(bitmap), _mark(bitmap, user_id, when)))
    records: dict[tuple[str | int, int], tuple[str | Statistic, float, list[float]]] = {}
    for item in submissions:
        for statistic, value, when in item.writes.records:
            key = (_merge_key(statistic), int(when))
            records.setdefault(key, (statistic, when, []))[2].append(value)
    for statistic, when, values in records.values():
        writes.append((_name(statistic), _record(statistic, values, when)))
    for item in submissions:
        writes += item.writes.deferred
    declared = [m for m, _ in (*hits.values(), *marks.values())] + [
        m for m, _, _ in records.values()
    ]
    admit_all(m for m in declared if not isinstance(m, str))
    for label, write in writes:
        try:
            write(batch)
        except REDIS_ERRORS:
            batch.calls.clear()
            raise
        except Exception as exc:
            report_data_error(label, exc, stored=False)
    return batch


def _merge_key(metric: str | Counter | UniqueBitmap | Statistic) -> str | int:
    """Writes to one name merge; a declared metric merges only with itself (two declarations
    of one name may differ, and a ``Counter`` equals any other of the same name)."""
    return metric if isinstance(metric, str) else id(metric)


def _name(metric: str | Counter | UniqueBitmap | Statistic) -> str:
    return metric if isinstance(metric, str) else metric.name


def _incr(counter: str | Counter, count: int, second: int) -> Deferred:
    metric = Counter(counter) if isinstance(counter, str) else counter
    return lambda batch: metric.incr(count, when=second, batch=batch)


def _mark(bitmap: str | UniqueBitmap, user_id: Any, when: float) -> Deferred:
    metric = UniqueBitmap(bitmap) if isinstance(bitmap, str) else bitmap
    return lambda batch: metric.mark(user_id, when=when, batch=batch)


def _record(statistic: str | Statistic, values: list[float], when: float) -> Deferred:
    metric = Statistic(statistic) if isinstance(statistic, str) else statistic

    def write(batch: Batch) -> None:
        metric.record_many(values, when=when, batch=batch)

    return write
