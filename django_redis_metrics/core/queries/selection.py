"""What a queryset (``core/queryset.py``) reads to find its rows: catalogue members in name
order, declared metrics holding no data merged in, and the rows built as model instances.

Two ways, as the lookups allow (``core/lookups.py``): when one catalogue range holds exactly
the rows (no lookup but one ``name=`` or ``name__startswith=``), a slice is one
``ZRANGEBYLEX ... LIMIT`` (a ``ZRANGE`` by rank for the whole catalogue) and a count one
``ZLEXCOUNT``; otherwise every member of the narrowest range is read, ``READ_PAGE`` a round
trip, and tested in Python.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..keys import catalogue_key, metric_key, to_str
from ..labels.labelling import SEPARATOR, SeriesName, split
from ..steps import Op, Pipe, Steps, chunked_steps
from . import declared
from .lookups import EVERYTHING, Group, LexRange, name_range, ranges, selects

if TYPE_CHECKING:
    from ..catalogue import CataloguedMetric

M = TypeVar("M", bound="CataloguedMetric")

#: Catalogue members read per ``ZRANGEBYLEX`` when a selection must test them in Python.
READ_PAGE = 10_000


@dataclass(frozen=True, slots=True)
class Entry:
    """A selected row before it is built: a catalogue member, or a declared metric (with no
    data) by its name."""

    member: str
    declared: Any = None


def candidates(kind: str, groups: Sequence[Group]) -> list[Any]:
    """The declared metrics of ``kind`` that ``groups`` select (as rows without labels), by
    name."""
    found = declared.declared(kind)
    return [found[name] for name in sorted(found) if selects(groups, name)]


def counts_steps(
    kind: str, rng: LexRange, declared_ones: Sequence[Any]
) -> Steps[tuple[int, int, list[tuple[int, Any]]]]:
    """(rows, catalogue members in ``rng``, those of ``declared_ones`` holding no data, each
    with how many members sort before it): one round trip on the catalogue."""
    key = catalogue_key(kind)
    ops = [Op("zlexcount", key, rng.low, rng.high)]
    for metric in declared_ones:
        own = name_range(metric.name)
        ops += [
            Op("zlexcount", key, own.low, own.high),
            Op("zlexcount", key, rng.low, b"(" + metric.name.encode()),
        ]
    replies = yield Pipe(ops)
    members = int(replies[0])
    empty = [
        (int(before), metric)
        for metric, has, before in zip(declared_ones, replies[1::2], replies[2::2], strict=True)
        if not int(has)
    ]
    return members + len(empty), members, empty


def slice_steps(
    kind: str, groups: Sequence[Group], rng: LexRange, reverse: bool, low: int, high: int | None
) -> Steps[list[Entry]]:
    """Rows ``low`` to ``high`` in name order (``reverse``: descending) of the range ``rng``
    read by ``ZRANGEBYLEX ... LIMIT``; declared metrics holding no data merged in by their
    place among the members (a ``ZLEXCOUNT`` each, in the same round trip as the count)."""
    key = catalogue_key(kind)
    declared_ones = candidates(kind, groups)
    if not declared_ones:
        if high is not None and high <= low:
            return []
        found = yield _page(key, rng, reverse, low, high)
        return [Entry(to_str(member)) for member in found]
    total, members, empty = yield from counts_steps(kind, rng, declared_ones)
    high = total if high is None else min(high, total)
    if low >= high:
        return []
    if reverse:
        low, high = total - high, total - low
    first, last = max(0, low - len(empty)), min(members, high)
    found = (yield _page(key, rng, False, first, last)) if last > first else []
    # A declared metric sorts before member number j iff fewer than j members sort before it.
    befores = [before for before, _ in empty]
    placed = [
        (at + bisect_right(befores, at), Entry(to_str(member)))
        for at, member in enumerate(found, start=first)
    ]
    placed += [(before + k, Entry(m.name, m)) for k, (before, m) in enumerate(empty)]
    chosen = [entry for at, entry in sorted(placed, key=_place) if low <= at < high]
    return chosen[::-1] if reverse else chosen


def _page(key: str, rng: LexRange, reverse: bool, low: int, high: int | None) -> Op:
    """Members ``low`` to ``high`` of ``rng`` (``reverse``: counted from its end): by rank for
    the whole catalogue (its members all score 0, so ranks are in name order), O(log N +
    page); else ``ZRANGEBYLEX … LIMIT``, which walks the ``low`` members before the page."""
    if rng == EVERYTHING:
        stop = -1 if high is None else high - 1
        return Op("zrevrange" if reverse else "zrange", key, low, stop)
    count = -1 if high is None else high - low
    if reverse:
        return Op("zrevrangebylex", key, rng.high, rng.low, start=low, num=count)
    return Op("zrangebylex", key, rng.low, rng.high, start=low, num=count)


def _place(pair: tuple[int, Entry]) -> int:
    return pair[0]


def every_entry_steps(kind: str, groups: Sequence[Group]) -> Steps[list[Entry]]:
    """Every row ``groups`` select, in name order: the members of the narrowest ranges read in
    pages of ``READ_PAGE``, tested in Python; declared metrics with none of them merged in."""
    key = catalogue_key(kind)
    members: list[str] = []
    for rng in ranges(groups):
        start = rng.low
        while True:
            page = yield Op("zrangebylex", key, start, rng.high, start=0, num=READ_PAGE)
            members += [to_str(member) for member in page]
            if len(page) < READ_PAGE:
                break
            last = page[-1]
            start = b"(" + (last if isinstance(last, bytes) else last.encode())
    entries = [Entry(member) for member in members if selects(groups, member)]
    declared_ones = candidates(kind, groups)
    if declared_ones:
        holding = {member.partition(SEPARATOR)[0] for member in members}
        entries += [Entry(m.name, m) for m in declared_ones if m.name not in holding]
        entries.sort(key=lambda entry: entry.member)
    return entries


def built_steps(model: type[M], entries: Sequence[Entry]) -> Steps[list[M]]:
    """The rows as model instances: each stored one configured from its meta hash (one
    pipelined round trip per ``CHUNK`` rows), each declared one as declared."""
    stored = [entry.member for entry in entries if entry.declared is None]
    kind = model.KIND
    ops = [Op("hgetall", metric_key(kind, member, "meta")) for member in stored]
    metas = yield from chunked_steps(ops)
    by_member = dict(zip(stored, metas, strict=True))
    builder = Builder(model)
    return [
        entry.declared
        if entry.declared is not None
        else builder.build(entry.member, by_member[entry.member])
        for entry in entries
    ]


class Builder(Generic[M]):
    """Model instances from catalogue members and their meta hashes: a plain metric as its
    meta says (defaults if it says nothing); a series as ``family.series_for(pairs)``, its
    family (built once per evaluation) as declared, else as its series' meta says."""

    def __init__(self, model: type[M]) -> None:
        self.model = model
        self.declared = declared.declared(model.KIND)
        self.families: dict[str, Any] = {}

    def configured(self, name: str, meta: Mapping[Any, Any]) -> Any:
        try:
            return self.model.from_meta(name, meta)
        except LookupError:  # retired, expired or never configured meanwhile: defaults
            return self.model(name)

    def build(self, member: str, meta: Mapping[Any, Any]) -> M:
        found: SeriesName = split(member)
        if not found.is_series:
            return self.configured(member, meta)  # type: ignore[no-any-return]
        family: Any = self.families.get(found.name)
        if family is None:
            family = self.declared.get(found.name)
            if family is None:
                family = self.configured(found.name, meta)
            self.families[found.name] = family
        if found.labels and not family.label_names:  # not declared: its series say
            family.label_names = tuple(label for label, _ in found.labels)
        series: M = family.series_for(found.labels, other=found.other)
        return series
