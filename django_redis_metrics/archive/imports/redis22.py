"""The keyspace of django-redis-metrics 2.2 read into the archive:
``import_metrics --redis-metrics URL``.

That package (another project on PyPI; import name ``redis_metrics``) keeps one string key per
metric slug and period, holding the period's count, dated in UTC (it stamps
``datetime.utcnow()``)::

    m:<slug>:h:2026-11-23-14    an hour (written only with MIN_GRANULARITY "hourly" or finer)
    m:<slug>:2026-11-23         a day

beside seconds (``s``), minutes (``i``), weeks (``w``), months (``m``) and years (``y``), its set
of slugs (``metric-slugs``), categories (``c:<category>``) and gauges (``g:<slug>``). Its hours
and days are the archive's epoch-aligned 3600- and 86400-second counter slices: those of
``ARCHIVE_PRECISIONS`` are imported; the other periods (whose counts are sums of days), the
categories and its gauges (a latest value, no history) are left.

Keys are found with ``SCAN`` (``MATCH <prefix>m:*``, ``COUNT ARCHIVE_BATCH``), never ``KEYS``;
each step reads its keys' counts with one ``MGET`` and upserts them, so an import holds one
batch and a rerun (or one resumed after a failure) writes the same rows. A key whose date or
count is not what 2.2 writes is skipped and reported. A slug names its metric (2.2 slugifies
slugs, so each is a valid name) unless ``--rename SLUG NAME`` maps it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from ...core.connection import RedisClient
from ...core.keys import to_str
from ...core.timeutil import EARLIEST, LATEST
from ..models import ArchivedSlice
from .writing import COUNTER_FIELDS, MAX_COUNT, Summary, Target, parse_target, write

#: The archive's precisions 2.2 keeps: ``seconds -> (key pattern, date format)``.
GRANULARITIES = {
    3600: (re.compile(r"m:([^:]+):h:(\d{4}-\d\d-\d\d-\d\d)\Z"), "%Y-%m-%d-%H"),
    86400: (re.compile(r"m:([^:]+):(\d{4}-\d\d-\d\d)\Z"), "%Y-%m-%d"),
}
#: How many skipped keys the report names (it counts them all).
SHOWN_SKIPPED = 10
_GLOB = re.compile(r"([*?\[\]\\])")


@dataclass
class Skipped:
    """Keys left out because they are not what 2.2 writes: counted, the first few named."""

    count: int = 0
    shown: list[str] = field(default_factory=list)

    def add(self, key: str, why: str) -> None:
        self.count += 1
        if len(self.shown) < SHOWN_SKIPPED:
            self.shown.append(f"{key}: {why}")


def precisions_read(precisions: Sequence[int]) -> tuple[int, ...]:
    """The ``ARCHIVE_PRECISIONS`` 2.2 has keys of; a ``ValueError`` when there is none."""
    read = tuple(p for p in precisions if p in GRANULARITIES)
    if not read:
        raise ValueError(
            f"ARCHIVE_PRECISIONS is {tuple(precisions)!r}: django-redis-metrics 2.2 keeps hours "
            "(3600) and days (86400), and the archive keeps neither, so nothing would be imported."
        )
    return read


def targets(renames: Sequence[tuple[str, str]]) -> dict[str, Target]:
    """``--rename SLUG NAME`` pairs, checked: each slug once, each name for one slug."""
    mapped = {slug: parse_target(name) for slug, name in renames}
    if len(mapped) != len(renames):
        raise ValueError("--rename names a slug twice.")
    series = [target.series for target in mapped.values()]
    if len(set(series)) != len(series):
        raise ValueError("--rename maps two slugs to one series: their slices would overwrite.")
    return mapped


def import_keyspace(
    client: RedisClient,
    *,
    prefix: str,
    renames: Mapping[str, Target],
    precisions: Sequence[int],
    using: str,
    batch: int,
    summary: Summary,
) -> Skipped:
    """Import every hour and day of every slug under ``prefix``; returns what was skipped."""
    read = precisions_read(precisions)
    skipped = Skipped()
    match = _GLOB.sub(r"\\\1", prefix) + "m:*"
    cursor = 0
    while True:
        cursor, keys = client.scan(cursor, match=match, count=batch)
        found = slices(keys, prefix, read, renames, skipped)
        if found:
            counts = client.mget(list(found))
            rows = counted(found, counts, skipped)
            write(rows, COUNTER_FIELDS, using=using, batch=batch, summary=summary)
        if not cursor:
            return skipped


def slices(
    keys: Sequence[bytes | str],
    prefix: str,
    precisions: Sequence[int],
    renames: Mapping[str, Target],
    skipped: Skipped,
) -> dict[str, ArchivedSlice]:
    """The hour and day keys among ``keys``, each with its slice (its count not yet read)."""
    found: dict[str, ArchivedSlice] = {}
    for raw in keys:
        key = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        tail = key[len(prefix) :]
        for precision in precisions:
            pattern, date_format = GRANULARITIES[precision]
            parsed = pattern.match(tail)
            if parsed is None:
                continue
            slug, date = parsed.groups()
            try:
                start = datetime.strptime(date, date_format).replace(tzinfo=UTC)
                if not EARLIEST <= start.timestamp() <= LATEST:  # never read back
                    raise ValueError("its date is not within the years 2 to 9998")
                target = renames.get(slug) or parse_target(slug)
            except ValueError as exc:
                skipped.add(key, str(exc))
                break
            found[key] = ArchivedSlice(
                kind="counter",
                series=target.series,
                metric=target.metric,
                precision=precision,
                start=int(start.timestamp()),
            )
            break
    return found


def counted(
    found: Mapping[str, ArchivedSlice], counts: Sequence[bytes | str | None], skipped: Skipped
) -> list[ArchivedSlice]:
    """The slices with their counts; one key per slice (a SCAN may return a key twice)."""
    rows: dict[tuple[str, int, int], ArchivedSlice] = {}
    for (key, row), value in zip(found.items(), counts, strict=True):
        if value is None:
            continue  # expired since the SCAN
        text = to_str(value)
        if not (text.isascii() and text.isdigit()) or int(text) > MAX_COUNT:
            skipped.add(key, f"its value {text[:40]!r} is not a count")
            continue
        row.count = int(text)
        if row.count:
            rows[(row.series, row.precision, row.start)] = row
    return list(rows.values())
