"""The admin's CSV export read back into the archive: ``import_metrics --csv FILE``.

The export (``admin/export.py``) has one row per slice: its start in ISO 8601 with a UTC offset,
its label, one column per extra line of the chart, ``value`` (the metric's own line) and, when
the range held annotations, ``annotations``. Columns map to series:

* ``value`` goes to ``--name``; any other column to the series ``--column HEADING NAME`` names
  (``NAME`` or ``NAME{label=value,...}``, e.g. a breakdown line ``view=home`` of ``hits`` to
  ``hits{view=home}``); columns not mapped are left out, and the summary names them.
* A counter's cells are counts (whole numbers, ``0`` or empty: no slice). A gauge's export
  carries, per slice, ``value`` (the last value) and its band (``min``, ``max``): each becomes
  one slice with ``last``, ``minimum``, ``maximum`` (``count``, how many values were set, is
  not exported: it is 1). A statistic's export carries means and percentiles, not the count,
  sum, sum of squares and extremes an archived slice keeps: it is refused.
* The overlaid previous period (``the day before``) is the same metric shifted: never imported.
* A slice not yet closed when the import runs (the export's live last point) is left out: it
  is still counting, and the archive passes archive it from Redis once it closes.

A file is read twice: once to check every line (nothing is written if one is wrong: the error
names its line), then to write it ``ARCHIVE_BATCH`` rows at a time, in one transaction.
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

from ...admin import gauges, statistics
from ...admin.charts import COMPARE
from ...core.timeutil import EARLIEST, LATEST
from ..models import ArchivedSlice
from .writing import MAX_COUNT, Target

START, LABEL, VALUE, NOTES = "start", "label", "value", "annotations"
#: The kinds a CSV imports, and those it refuses with the reason.
KINDS = ("counter", "gauge")
REFUSED = {
    "statistic": (
        "A statistic's export carries its mean and percentiles per slice, not the count, sum, "
        "sum of squares, minimum and maximum an archived slice keeps: it cannot be imported."
    ),
}
#: Headings of the overlaid previous period: the same metric shifted, never imported.
COMPARED = frozenset(label for _, label in COMPARE.values())


#: Makes the error (a ``ValueError``) of the line being read from what is wrong with it.
Wrong = Callable[[str], ValueError]


@dataclass(frozen=True)
class CsvPlan:
    """What one file imports: its kind and precision, and which column goes to which series."""

    path: str
    kind: str
    precision: int
    #: ``(column index, target)``, in the file's order.
    columns: tuple[tuple[int, Target], ...]
    #: Gauges: the columns of the band's low and high edges.
    band: tuple[int, int] | None
    #: Headings left out (not mapped).
    ignored: tuple[str, ...]
    #: The import's clock: slices ending after it are still open, and left out.
    now: float


def current_time() -> float:
    """The import's clock (epoch seconds)."""
    return time.time()


def plan(
    path: str,
    kind: str,
    precision: int,
    name: Target | None,
    columns: Sequence[tuple[str, Target]],
) -> CsvPlan:
    """Check the file's header against what was asked; a ``ValueError`` says what is wrong."""
    if kind in REFUSED:
        raise ValueError(REFUSED[kind])
    if kind not in KINDS:
        raise ValueError(f"--kind must be one of {', '.join(KINDS)}, not {kind!r}.")
    header = read_header(path)
    wanted = dict(columns)
    if name is not None:
        if VALUE in wanted:
            raise ValueError("--name and --column value both name the value column: give one.")
        wanted[VALUE] = name
    if not wanted:
        raise ValueError("Say where the values go: --name NAME, or --column HEADING NAME.")
    refuse_other_kinds(path, kind, header)
    band = None
    if kind == "gauge":
        if set(wanted) != {VALUE}:
            raise ValueError("A gauge's export is imported whole: --name NAME, no --column.")
        if gauges.BAND_LOW not in header or gauges.BAND_HIGH not in header:
            raise ValueError(
                f"{path}: a gauge's export has the columns {gauges.BAND_LOW!r} and "
                f"{gauges.BAND_HIGH!r} (a labelled gauge's chart has not: export one series)."
            )
        band = (header.index(gauges.BAND_LOW), header.index(gauges.BAND_HIGH))
    targets = [target.series for target in wanted.values()]
    if len(set(targets)) != len(targets):
        raise ValueError("Two columns go to the same series: each series takes one column.")
    mapped = []
    for heading, target in wanted.items():
        if heading in COMPARED:
            raise ValueError(
                f"Column {heading!r} is the previous period overlaid on the chart (the same "
                "metric, shifted): it is not imported. Export the range itself instead."
            )
        if heading in (START, LABEL, NOTES) or heading not in header:
            raise ValueError(
                f"{path} has no column of values {heading!r}; it has "
                f"{', '.join(repr(h) for h in header if h not in (START, LABEL, NOTES))}."
            )
        mapped.append((header.index(heading), target))
    used = set(wanted) | {START, LABEL} | ({gauges.BAND_LOW, gauges.BAND_HIGH} if band else set())
    return CsvPlan(
        path=path,
        kind=kind,
        precision=precision,
        columns=tuple(sorted(mapped, key=lambda pair: pair[0])),
        band=band,
        ignored=tuple(h for h in header if h not in used),
        now=current_time(),
    )


def records(file: Iterable[str], path: str) -> Iterator[tuple[int, list[str]]]:
    """``(line number, cells)`` of each record of ``file``; what the csv module cannot read
    (a field over its 131,072 characters, which no export writes) is a ``ValueError`` naming
    the line."""
    reader = csv.reader(file)
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ValueError(f"{path}, line {reader.line_num}: {exc}.") from None
        yield reader.line_num, cells


def read_header(path: str) -> list[str]:
    with open(path, encoding="utf-8-sig", newline="") as file:
        header = next((cells for _, cells in records(file, path)), None)
    if not header or header[:2] != [START, LABEL] or VALUE not in header:
        raise ValueError(
            f"{path}, line 1: not the admin's export (its header starts with 'start', 'label' "
            f"and has a 'value' column), but {header!r}."
        )
    return header


def refuse_other_kinds(path: str, kind: str, header: Sequence[str]) -> None:
    """An export of another kind than ``kind``, told by its band columns, is refused."""
    if statistics.BAND_LOW in header:
        raise ValueError(f"{path} is a statistic's export. {REFUSED['statistic']}")
    if kind != "gauge" and gauges.BAND_LOW in header:
        raise ValueError(f"{path} is a gauge's export: import it with --kind gauge.")


def rows(plan: CsvPlan, still_open: list[int] | None = None) -> Iterator[ArchivedSlice]:
    """The slices of ``plan``'s file, line by line; a ``ValueError`` names a wrong line.
    The starts of slices still open are appended to ``still_open``, not yielded."""
    with open(plan.path, encoding="utf-8-sig", newline="") as file:
        lines = records(file, path=plan.path)
        width = len(next(lines)[1])
        previous: int | None = None
        for line, cells in lines:

            def wrong(what: str, line: int = line) -> ValueError:
                return ValueError(f"{plan.path}, line {line}: {what}")

            if not cells:
                continue
            if len(cells) != width:
                raise wrong(f"{len(cells)} cells, where the header has {width}.")
            start = slice_start(cells[0], plan.precision, wrong)
            if previous is not None and start <= previous:
                raise wrong("its start is not after the line before's (the export is in order).")
            previous = start
            found = list(line_rows(plan, start, cells, wrong))  # checked, open or not
            if start + plan.precision > plan.now:
                if still_open is not None:
                    still_open.append(start)
                continue
            yield from found


def line_rows(
    plan: CsvPlan, start: int, cells: Sequence[str], wrong: Wrong
) -> Iterator[ArchivedSlice]:
    """The slices of one line: one per mapped column holding a count, or a gauge's one."""
    if plan.kind == "gauge":
        yield from gauge_row(plan, start, cells, wrong)
        return
    for index, target in plan.columns:
        count = whole_count(cells[index], wrong)
        if count:
            yield ArchivedSlice(
                kind="counter",
                series=target.series,
                metric=target.metric,
                precision=plan.precision,
                start=start,
                count=count,
            )


def slice_start(cell: str, precision: int, wrong: Wrong) -> int:
    try:
        when = datetime.fromisoformat(cell.strip())
    except ValueError:
        raise wrong(f"start {cell!r} is not an ISO 8601 date and time.") from None
    if when.utcoffset() is None:
        raise wrong(f"start {cell!r} has no UTC offset (the export writes one).")
    stamp = when.timestamp()
    if not EARLIEST <= stamp <= LATEST:  # history() could never read such a slice back
        raise wrong(f"start {cell!r} is not within the years 2 to 9998.")
    if stamp != int(stamp) or int(stamp) % precision:
        raise wrong(
            f"start {cell!r} does not begin a slice of {precision} seconds (slices begin at "
            f"multiples of {precision} s since the epoch): was it exported at that precision?"
        )
    return int(stamp)


def whole_count(cell: str, wrong: Wrong) -> int:
    text = cell.strip()
    if not text:
        return 0
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_COUNT:
        raise wrong(f"{cell!r} is not a count (a whole number from 0).")
    return int(text)


def measure(cell: str, wrong: Wrong) -> float:
    try:
        value = float(cell)
    except ValueError:
        raise wrong(f"{cell!r} is not a number.") from None
    if not math.isfinite(value):
        raise wrong(f"{cell!r} is not a finite number.")
    return value


def gauge_row(
    plan: CsvPlan, start: int, cells: Sequence[str], wrong: Wrong
) -> Iterator[ArchivedSlice]:
    assert plan.band is not None
    (index, target), (low, high) = plan.columns[0], plan.band
    texts = [cells[index].strip(), cells[low].strip(), cells[high].strip()]
    if not any(texts):
        return  # an empty slice
    if not all(texts):
        raise wrong("a gauge's slice has its last value, min and max, or none of them.")
    last, minimum, maximum = (measure(text, wrong) for text in texts)
    if not minimum <= last <= maximum:
        raise wrong(f"min {minimum:g} <= last {last:g} <= max {maximum:g} does not hold.")
    yield ArchivedSlice(
        kind="gauge",
        series=target.series,
        metric=target.metric,
        precision=plan.precision,
        start=start,
        count=1,
        last=last,
        minimum=minimum,
        maximum=maximum,
    )
