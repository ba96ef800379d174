"""What both importers share: the series a row goes to, the batched upserts, the summary.

Rows are written ``ARCHIVE_BATCH`` at a time, by the archive's upserts (``upsert_slices``): an
import holds one batch in memory, and importing the same history twice sets the same values.
A summary line per series says what was written (or, with ``--dry-run``, what would be).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import islice

from ...core.keys import validate_name
from ...core.labels.labelling import (
    OTHER,
    label_value,
    series_name,
    split,
    validate_label_names,
)
from ..base import upsert_slices
from ..models import ArchivedSlice

#: The fields an imported counter slice sets (a re-import sets them again, never adds).
COUNTER_FIELDS = ("metric", "count")
#: The largest count a slice holds (the column is a 64-bit integer).
MAX_COUNT = 2**63 - 1
#: The fields an imported gauge slice sets.
GAUGE_FIELDS = ("metric", "count", "last", "minimum", "maximum")

_TARGET = re.compile(r"(?P<name>[^{}]*)(?:\{(?P<labels>[^{}]*)\})?\Z", re.DOTALL)


@dataclass(frozen=True)
class Target:
    """Where imported values go: a metric's own series, or one labelled series of it."""

    metric: str
    series: str

    def __str__(self) -> str:
        """As ``--name`` and ``--column`` take it: ``hits`` or ``hits{view=home}``."""
        found = split(self.series)
        if not found.is_series:
            return found.name
        labels = [OTHER] if found.other else [f"{k}={v}" for k, v in found.labels]
        return f"{found.name}{{{','.join(labels)}}}"


def parse_target(text: str) -> Target:
    """``hits`` (the metric's own series) or ``hits{view=home,status=2xx}`` (a labelled
    series of ``hits``, labels in the metric's declared order): names and values checked as
    the metrics check them."""
    found = _TARGET.match(text)
    if found is None:
        raise ValueError(
            f"{text!r} is not a metric name nor NAME{{label=value,...}}: braces are only allowed "
            "around the labels, once, at the end."
        )
    name = validate_name(found["name"].strip())
    if found["labels"] is None:
        return Target(name, name)
    pairs = []
    for part in found["labels"].split(","):
        label, equals, value = part.partition("=")
        if not equals:
            raise ValueError(f"{text!r}: each label is label=value, not {part!r}.")
        pairs.append((label.strip(), value.strip()))
    validate_label_names([label for label, _ in pairs], f"metric {name!r}")
    if len({label for label, _ in pairs}) != len(pairs):
        raise ValueError(f"{text!r} names a label twice.")
    return Target(name, series_name(name, [(k, label_value(v, k)) for k, v in pairs]))


@dataclass
class SeriesSummary:
    """What an import holds of one series at one precision."""

    slices: int = 0
    first: int | None = None
    last: int | None = None
    total: int = 0

    def add(self, start: int, count: int) -> None:
        self.slices += 1
        self.total += count
        self.first = start if self.first is None else min(self.first, start)
        self.last = start if self.last is None else max(self.last, start)


@dataclass
class Summary:
    """Per ``(kind, series, precision)``: slices, first and last start, counts added up."""

    dry_run: bool = False
    series: dict[tuple[str, str, int], SeriesSummary] = field(default_factory=dict)

    def add(self, row: ArchivedSlice) -> None:
        key = (row.kind, row.series, row.precision)
        self.series.setdefault(key, SeriesSummary()).add(row.start, row.count)

    @property
    def rows(self) -> int:
        return sum(s.slices for s in self.series.values())

    def lines(self) -> list[str]:
        verb = "would import" if self.dry_run else "imported"
        out = []
        for (kind, series, precision), s in sorted(self.series.items()):
            shown = str(Target(series, series))
            span = f"from {utc(s.first)} to {utc(s.last)}" if s.first is not None else ""
            total = f", {s.total:,} counted" if kind == "counter" else ""
            out.append(
                f"{kind} {shown!r} every {precision}s: {verb} {s.slices:,} "
                f"slice{'' if s.slices == 1 else 's'} {span}{total}"
            )
        out.append(f"{verb} {self.rows:,} rows of {len(self.series):,} series")
        return out


def utc(when: int | None) -> str:
    """``2026-11-23T14:00Z``: a slice start in the summary."""
    if when is None:
        return "-"
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%MZ")


def batches(rows: Iterable[ArchivedSlice], size: int) -> Iterator[list[ArchivedSlice]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk


def write(
    rows: Iterable[ArchivedSlice],
    fields: tuple[str, ...],
    *,
    using: str,
    batch: int,
    summary: Summary,
) -> None:
    """Upsert ``rows``, ``batch`` at a time (none with ``summary.dry_run``), counting them."""
    for chunk in batches(rows, batch):
        for row in chunk:
            summary.add(row)
        if not summary.dry_run:
            upsert_slices(chunk, using, fields)
