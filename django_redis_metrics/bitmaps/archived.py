"""A bitmap's periods that Redis no longer holds, read from the archive (``archive/``).

A count of an archived period is its row's count (a labelled bitmap read whole: the OR of its
series' archived bits, for weeks and months; their days keep counts only, per series). A range
or a retention table reaching archived weeks or months reads their bits into one temporary
key of the bitmap's slot (with a TTL, unlinked after the read) that Redis combines with the
periods it holds, as any other key (:class:`ArchivedBits`).

The archive's models are imported when a read needs them (this module is imported with the
models, before Django's apps are ready).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar

from asgiref.sync import sync_to_async

from ..archive.bits import popcount, union_bits
from ..archive.horizon import is_archived
from ..core.keys import temp_key
from ..core.periods import Period
from ..core.steps import Op, Pipe, Steps
from .bounds import TEMP_TTL_MS
from .keys import KIND

T = TypeVar("T")


class Named(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def gen_key(self) -> str: ...


def _rows(name: str, period: str, starts: list[int]) -> dict[int, list[tuple[int, Any]]]:
    from ..archive.reading import archived_rows

    return archived_rows(KIND, name, period, starts, data=True)


def split_archived(
    periods: Sequence[Period], keep: Mapping[str, int], now: float, *, bits: bool = False
) -> tuple[list[Period], list[Period]]:
    """``periods`` as (those Redis holds, those it no longer does) by the retention ``keep``
    (``BITMAP_RETENTION``). With ``bits``, only weeks and months count as archived (those
    whose bits are): older days stay Redis's, which reads them as empty, as it always did."""
    held: list[Period] = []
    gone: list[Period] = []
    for period in periods:  # one pass: a range may plan thousands of periods
        archived = is_archived(period, keep, now) and (not bits or period.name in BITS)
        (gone if archived else held).append(period)
    return held, gone


def archived_counts(bitmap: Named, periods: Sequence[Period]) -> list[int]:
    """Distinct users of each of ``periods`` (archived, of one name; 0 where none was
    archived), one query: a period's count, or for a labelled bitmap read whole the OR of
    its series' bits (their days keep counts only: a ``ValueError``)."""
    if not periods:
        return []
    name = periods[0].name
    rows = _rows(bitmap.name, name, [int(p.start_ts) for p in periods])
    out = []
    for period in periods:
        found = rows.get(int(period.start_ts), [])
        if len(found) <= 1:
            out.append(found[0][0] if found else 0)
        elif name == "day":
            raise ValueError(
                f"The archive keeps the count of each series of {bitmap.name!r} for a day, "
                "not their bits: count one series (labels(...)), or a week or month."
            )
        else:
            out.append(popcount(union_bits(data for _count, data in found)))
    return out


#: The periods whose bits are archived.
BITS = ("week", "month")


class ArchivedBits:
    """The union of some archived weeks and months of a bitmap (its series' too, when it is
    read whole), standing in a query for a bitmap with one key: a temporary key of the
    bitmap's slot, set from the archive by :meth:`load_steps` when the query runs."""

    def __init__(self, bitmap: Named, periods: Sequence[Period]) -> None:
        for period in periods:
            if period.name not in BITS:
                raise ValueError(
                    f"The archive keeps the bits of weeks and months only, not of "
                    f"{period.key_part} ({bitmap.name!r})."
                )
        self.bitmap = bitmap
        self.periods = tuple(periods)
        self.temp = temp_key(KIND, bitmap.name, f"archived:{uuid.uuid4().hex}")
        self._bits: bytes | None = None

    @property
    def name(self) -> str:
        return self.bitmap.name

    @property
    def gen_key(self) -> str:
        return self.bitmap.gen_key

    def key(self, period: Period) -> str:
        return self.temp

    def period_keys(self, periods: tuple[Period, ...]) -> list[str]:
        return [self.temp]

    def prefetch(self) -> bytes:
        """The archived bits, read once (an async read calls this through ``sync_to_async``)."""
        if self._bits is None:
            parts: list[Any] = []
            for name in BITS:
                starts = [int(p.start_ts) for p in self.periods if p.name == name]
                if starts:
                    rows = _rows(self.bitmap.name, name, starts)
                    parts += [data for found in rows.values() for _count, data in found]
            self._bits = union_bits(parts)
        return self._bits


def stand_ins(leaves: Sequence[Any]) -> list[ArchivedBits]:
    """The archived stand-ins among a query's leaves (``PeriodUnion``s)."""
    return [leaf.bitmap for leaf in leaves if isinstance(leaf.bitmap, ArchivedBits)]


def period_stand_ins(
    bitmap: Named, periods: Sequence[Period], keep: Mapping[str, int], now: float
) -> dict[Period, ArchivedBits]:
    """A stand-in for each of ``periods`` Redis no longer holds (a retention table's)."""
    gone = split_archived(periods, keep, now, bits=True)[1]
    return {period: ArchivedBits(bitmap, [period]) for period in gone}


def with_archived(stored: Sequence[ArchivedBits], steps: Steps[T]) -> Steps[T]:
    """``steps``, the archived stand-ins ``stored`` set in Redis before them (a union of
    nothing leaves its key missing: an empty bitmap) and unlinked after."""
    sets = [Op("set", b.temp, bits, px=TEMP_TTL_MS) for b in stored if (bits := b.prefetch())]
    if sets:
        yield Pipe(sets)
    answer = yield from steps
    if stored:  # one UNLINK each: on Redis Cluster they may lie in several slots
        yield Pipe([Op("unlink", bitmap.temp) for bitmap in stored], raise_on_error=False)
    return answer


async def aprefetch(stored: Sequence[ArchivedBits]) -> None:
    """Read the archive for ``stored`` off the event loop (nothing when there is none)."""
    if stored:
        await sync_to_async(lambda: [bitmap.prefetch() for bitmap in stored])()
