"""Lazy querysets over the metrics of one kind, as Django's ``QuerySet`` (``Model.objects``).

A row is a member of the kind's catalogue (``core/catalogue.py``): a plain metric, or one
series of a labelled metric (``core/labelling.py``), built as a model instance; plus each
metric declared in a ``metrics.py`` (``core/declared.py``) that holds no data yet, as declared.
A labelled metric's own name is a row only then: it holds no keys, its series are its rows.

Nothing is read until the queryset is evaluated (iterated, sliced with a step or an index,
``count()``, ``exists()``, ``first()``, ``get()``, an aggregate). What it costs:

* name order (the default, or ``"-name"``) with no lookup but one ``name=`` or
  ``name__startswith=``: ``count()`` one ``ZLEXCOUNT``; a slice ``qs[a:b]`` one
  ``ZRANGE`` by rank (O(log N + page)) or, with a name lookup, ``ZRANGEBYLEX ... LIMIT``
  (O(log N + a + page)), and one pipelined ``HGETALL`` of the shown rows' configuration;
  declared metrics add a ``ZLEXCOUNT`` each to these round trips. This is the admin list
  page's case.
* any other lookup: the catalogue's members in the narrowest range the lookups allow (a
  name's series for ``name=``/``name__in=``, a prefix for ``name__startswith=``, else all of
  them) read in pages of ``READ_PAGE`` and tested in Python: O(members in range).
* ``order_by("total")`` / ``("last_seen")``: besides, each selected row's configuration and
  its value, in one pipelined round trip per Redis node (``gather``): O(rows).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from asgiref.sync import sync_to_async

from ..drive import adrive, drive
from ..labels.admission import answers
from ..steps import Steps
from ..timeutil import When
from . import declared, measures, selection
from .lookups import Group, LexRange, exact_by_range, parse, ranges
from .selection import Entry

if TYPE_CHECKING:
    from ..catalogue import CataloguedMetric

M = TypeVar("M", bound="CataloguedMetric")

#: The orderings a queryset accepts (``-`` descending; ties in name order).
ORDERINGS = ("name", "-name", "total", "-total", "last_seen", "-last_seen")
#: Rows ``get()`` reads to say how many matched when more than one did (Django's number).
MAX_GET_RESULTS = 21


@dataclass(frozen=True, slots=True)
class _Query:
    groups: tuple[Group, ...] = ()
    order: str = "name"
    low: int = 0
    high: int | None = None

    @property
    def sliced(self) -> bool:
        return self.low != 0 or self.high is not None


class MetricQuerySet(Generic[M]):
    """The metrics of ``model`` that the lookups select, in order; lazy and chainable."""

    def __init__(self, model: type[M], query: _Query | None = None) -> None:
        self.model = model
        self._query = query or _Query()
        self._cache: list[M] | None = None
        #: Every selected row in name order, unsliced, once read (slices of this queryset
        #: share it: a count, then a page, read the catalogue once).
        self._every: list[Entry] | None = None

    # Building

    def _clone(self, **changes: Any) -> MetricQuerySet[M]:
        return MetricQuerySet(self.model, replace(self._query, **changes))

    def _refuse_if_sliced(self, what: str) -> None:
        if self._query.sliced:
            raise TypeError(f"Cannot {what} a query once a slice has been taken.")

    def all(self) -> MetricQuerySet[M]:
        """A copy of this queryset (read again when evaluated)."""
        return self._clone()

    def filter(self, **lookups: object) -> MetricQuerySet[M]:
        """The rows matching every lookup too: ``name``/``labels__<label>``, each with
        ``exact`` (the default), ``iexact``, ``in``, ``startswith``, ``istartswith``,
        ``contains``, ``icontains`` or ``regex`` (``re.search``)."""
        self._refuse_if_sliced("filter")
        if not lookups:
            return self._clone()
        return self._clone(groups=(*self._query.groups, Group(parse(lookups))))

    def exclude(self, **lookups: object) -> MetricQuerySet[M]:
        """The rows not matching all of these lookups (a row without a label never matches a
        lookup on it, so it is kept)."""
        self._refuse_if_sliced("exclude")
        if not lookups:
            return self._clone()
        return self._clone(groups=(*self._query.groups, Group(parse(lookups), negated=True)))

    def order_by(self, *fields: str) -> MetricQuerySet[M]:
        """Rows in the order of one of ``ORDERINGS`` (``"-"`` descending, ties by name);
        ``total`` is a counter's sum over its coarsest precision, ``last_seen`` the newest
        slice holding data (kinds kept in slices)."""
        self._refuse_if_sliced("reorder")
        if len(fields) > 1:
            raise ValueError("order_by() takes one field (ties are in name order).")
        order = fields[0] if fields else "name"
        if order not in ORDERINGS:
            raise ValueError(f"Cannot order by {order!r}; choose one of {', '.join(ORDERINGS)}.")
        measures.check_value(self.model, order.lstrip("-"))
        return self._clone(order=order)

    @property
    def ordered(self) -> bool:
        """Always (name order by default): Django's ``Paginator`` asks."""
        return True

    # Evaluating

    @overload
    def __getitem__(self, key: int) -> M: ...
    @overload
    def __getitem__(self, key: slice) -> MetricQuerySet[M]: ...
    def __getitem__(self, key: int | slice) -> M | MetricQuerySet[M]:
        """``qs[a:b]`` a queryset reading only those rows where the order allows; ``qs[i]``
        the row (``IndexError`` if none). No negative indexes, as in Django."""
        if isinstance(key, slice):
            start, stop = key.start or 0, key.stop
            if not isinstance(start, int) or (stop is not None and not isinstance(stop, int)):
                raise TypeError("A queryset is sliced by ints.")
            if start < 0 or (stop is not None and stop < 0):
                raise ValueError("Negative indexing is not supported.")
            if self._cache is not None or key.step is not None:
                return _listed(self, self._fetch()[key])
            query = self._query
            low = query.low + start
            high = query.high if stop is None else max(low, query.low + stop)
            if query.high is not None and high is not None:
                high = min(high, query.high)
            if high is not None:
                low = min(low, high)  # an empty slice, read as such
            sliced = MetricQuerySet(self.model, replace(query, low=low, high=high))
            sliced._every = self._every
            return sliced
        if isinstance(key, bool) or not isinstance(key, int):
            raise TypeError(f"A queryset is indexed by ints or slices, not {type(key).__name__}.")
        if key < 0:
            raise ValueError("Negative indexing is not supported.")
        if self._cache is not None:
            return self._cache[key]
        found = self[key : key + 1]._fetch()
        if not found:
            raise IndexError("queryset index out of range")
        return found[0]

    def _fetch(self) -> list[M]:
        if self._cache is None:
            self._cache = drive(self._rows_steps())
        return self._cache

    def __iter__(self) -> Iterator[M]:
        return iter(self._fetch())

    async def __aiter__(self) -> AsyncIterator[M]:
        if self._cache is None:
            self._cache = await adrive(self._rows_steps())
        for row in self._cache:
            yield row

    def __len__(self) -> int:
        return len(self._fetch())

    def __bool__(self) -> bool:
        return bool(self._fetch())

    def __repr__(self) -> str:
        return f"<{type(self).__name__} of {self.model.__name__} {self._query}>"

    def count(self) -> int:
        """How many rows: one ``ZLEXCOUNT`` round trip in the cheap case (module docstring)."""
        if self._cache is not None:
            return len(self._cache)
        return drive(self._count_steps())

    async def acount(self) -> int:
        """``count()`` awaited."""
        if self._cache is not None:
            return len(self._cache)
        return await adrive(self._count_steps())

    def exists(self) -> bool:
        """Whether any row is selected (as cheap as ``count()``)."""
        return self.count() > 0

    async def aexists(self) -> bool:
        """``exists()`` awaited."""
        return await self.acount() > 0

    def first(self) -> M | None:
        """The first row, or ``None``: reads one row where the order allows."""
        found = self[:1]._fetch() if self._cache is None else self._cache[:1]
        return found[0] if found else None

    async def afirst(self) -> M | None:
        """``first()`` awaited."""
        found = [row async for row in self[:1]]
        return found[0] if found else None

    def get(self, **lookups: object) -> M:
        """The one row these lookups (and the queryset's) select; ``Model.DoesNotExist`` or
        ``Model.MultipleObjectsReturned`` otherwise."""
        chosen = self.filter(**lookups) if lookups else self
        return chosen._one(chosen[:MAX_GET_RESULTS]._fetch(), lookups)

    async def aget(self, **lookups: object) -> M:
        """``get()`` awaited."""
        chosen = self.filter(**lookups) if lookups else self
        return chosen._one([row async for row in chosen[:MAX_GET_RESULTS]], lookups)

    def _one(self, found: list[M], lookups: Mapping[str, object]) -> M:
        what = ", ".join(f"{key}={value!r}" for key, value in lookups.items()) or "the query"
        if not found:
            raise self.model.DoesNotExist(f"No {self.model.LABEL} matches {what}.")
        if len(found) > 1:
            many = f"{len(found)}" if len(found) < MAX_GET_RESULTS else "more than 20"
            raise self.model.MultipleObjectsReturned(
                f"get() returned more than one {self.model.LABEL} for {what}: {many}."
            )
        return found[0]

    def delete(self) -> int:
        """Retire every selected metric or series, all its keys (each kind's ``delete()``:
        a few round trips each); returns how many were deleted. Declared metrics holding no
        data, and a labelled metric's own name, have no keys and are not counted."""
        self._refuse_if_sliced("delete")
        unwritten: dict[str, Any] = declared.declared(self.model.KIND)  # as declared: no data
        rows = [row for row in self if _holds_keys(row) and unwritten.get(row.name) is not row]
        for row in rows:
            row.delete()
        if any(getattr(row, "family", None) is not None for row in rows):
            answers.clear()  # deleted series are admitted (listed) again by their next write
        return len(rows)

    # Aggregates (core/measures.py)

    def total(self, precision: int | None = None) -> Any:
        """The selected series' samples of ``precision`` (default: each one's coarsest) as
        one: a counter's sum (an ``int``), a statistic's merged summary (a dict, as
        ``Statistic.summary``). One pipelined round trip per Redis node."""
        return drive(measures.total_steps(self.model, self._selected_steps(), precision))

    async def atotal(self, precision: int | None = None) -> Any:
        """``total()`` awaited."""
        return await adrive(measures.total_steps(self.model, self._selected_steps(), precision))

    def series(self, precision: int) -> list[tuple[int, Any]]:
        """``(slice start, value)`` of ``precision``, each slice combined over the selected
        series (a count, or a summary), oldest first."""
        return drive(measures.series_steps(self.model, self._selected_steps(), precision))

    async def aseries(self, precision: int) -> list[tuple[int, Any]]:
        """``series()`` awaited."""
        return await adrive(measures.series_steps(self.model, self._selected_steps(), precision))

    def history(self, precision: int, start: When, end: When) -> list[tuple[int, Any]]:
        """The selected series' slices of ``precision`` from ``start`` to ``end``, Redis and
        the archive spliced, combined per slice as the model's ``history()`` combines a
        labelled metric's series (counters add, statistics merge, gauges group)."""
        read = getattr(self.model, "rows_history", None)  # archive.history.HistoryReads's
        if read is None:
            raise TypeError(f"history() is for metrics kept in slices, not {self.model.LABEL}s.")
        rows = measures._readable(drive(self._selected_steps()))
        return read(rows, precision, start, end)  # type: ignore[no-any-return]

    async def ahistory(self, precision: int, start: When, end: When) -> list[tuple[int, Any]]:
        """``history()`` awaited (in a worker thread: it reads Redis and the database)."""
        return await sync_to_async(self.history)(precision, start, end)

    def group_by(self, *labels: str) -> measures.Grouped:
        """The aggregates per value of ``labels``: ``.group_by("view").total(86400)`` ->
        ``{"home": 42, ...}`` (a tuple of values per key for several labels)."""
        return measures.Grouped(self.model, self._selected_steps, labels)

    # Reading (steps: core/steps.py)

    def _selected_steps(self) -> Steps[list[M]]:
        if self._cache is not None:
            return self._cache
        return (yield from self._rows_steps())

    def _fast_range(self) -> LexRange | None:
        """The one catalogue range that holds exactly the rows, when the order is by name."""
        query = self._query
        if query.order.lstrip("-") != "name" or not exact_by_range(query.groups):
            return None
        found = ranges(query.groups)
        return found[0] if len(found) == 1 else None

    def _every_steps(self) -> Steps[list[Entry]]:
        """Every selected row in name order, unsliced: read once per queryset."""
        if self._every is None:
            self._every = yield from selection.every_entry_steps(
                self.model.KIND, self._query.groups
            )
        return self._every

    def _count_steps(self) -> Steps[int]:
        fast = self._fast_range()
        if fast is None:
            return len((yield from self._entries_steps()))
        declared_ones = selection.candidates(self.model.KIND, self._query.groups)
        total, _, _ = yield from selection.counts_steps(self.model.KIND, fast, declared_ones)
        high = total if self._query.high is None else min(self._query.high, total)
        return max(0, high - self._query.low)

    def _entries_steps(self) -> Steps[list[Entry]]:
        """The selected rows in name order, sliced (not yet built)."""
        query, kind = self._query, self.model.KIND
        reverse = query.order == "-name"
        fast = self._fast_range()
        if fast is not None:
            return (
                yield from selection.slice_steps(
                    kind, query.groups, fast, reverse, query.low, query.high
                )
            )
        every = yield from self._every_steps()
        entries = every[::-1] if reverse else every
        return entries[query.low : query.high]

    def _rows_steps(self) -> Steps[list[M]]:
        """The rows, built; ordered by value after reading the values, if so ordered."""
        query = self._query
        if query.order.lstrip("-") == "name":
            entries = yield from self._entries_steps()
            return (yield from selection.built_steps(self.model, entries))
        every = yield from self._every_steps()
        rows = yield from selection.built_steps(self.model, every)
        values = yield from measures.values_steps(self.model, rows, query.order.lstrip("-"))
        descending = query.order.startswith("-")
        ordered = sorted(
            zip(values, rows, strict=True),
            key=lambda pair: (-pair[0] if descending else pair[0], pair[1].name),
        )
        return [row for _, row in ordered][query.low : query.high]


def _holds_keys(row: Any) -> bool:
    """Whether ``row`` may hold keys: not a labelled metric itself (its series hold them)."""
    return not (getattr(row, "label_names", ()) and getattr(row, "family", None) is None)


def _listed(queryset: MetricQuerySet[M], rows: list[M]) -> MetricQuerySet[M]:
    """A queryset already evaluated to ``rows`` (a slice of an evaluated queryset)."""
    query = replace(queryset._query, low=0, high=len(rows))  # sliced: no more filtering
    copy: MetricQuerySet[M] = MetricQuerySet(queryset.model, query)
    copy._cache = rows
    return copy
