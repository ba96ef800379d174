"""A labelled metric's breakdown on its chart page: its series grouped by one label's values.

A labelled metric (``Counter("hits", labels=("view", "status"))``) keeps its data in series,
each listed in its kind's catalogue as ``hits\\x1fview=home\\x1fstatus=2xx``
(``core/labels/labelling.py``). Its page lists them in the round trip of its own first read (one
``ZRANGEBYLEX``), then reads every series it shows in **one pipelined round** (the gather driver),
one ``HMGET`` of the range's slices per series. The series are grouped by the values of one label
(``?by=view``, default: the first label), the other labels added up; the ``TOP`` values with the
most (a counter's total, a statistic's count) get a row and a line each, the rest is summed as
*others*. Filters (``?view=home&view=about&status=2xx``: values of one label are alternatives,
labels all apply) choose the series read, so they restrict the chart and the table alike.

Bounded: at most ``MAX_LISTED`` series names are listed and ``MAX_READ`` series read (a page of a
busier metric says it shows part of them; filters narrow what is read). Labels and values are user
data: they reach the page through autoescaped templates and ``json_script`` only, and the CSV
export names a line ``label=value`` (a label is an identifier, so no cell starts a formula).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, QueryDict

from ..core.base import Metric
from ..core.drive import drive, gather
from ..core.keys import catalogue_key, metric_key, to_str
from ..core.labels.labelling import OTHER, OVERFLOW_FIELD, series_range, split
from ..core.sliced import SlicedMetric
from ..core.steps import Op, Steps

M = TypeVar("M", bound=SlicedMetric)

#: Label values with a row and a line of their own; the rest is summed as "others".
TOP = 10
#: Most series names a page lists (one ``ZRANGEBYLEX``; the ``MAX_SERIES`` default is 1,000).
MAX_LISTED = 10_000
#: Most series a counter's page reads (one ``HMGET`` of the range's slices each, one round).
MAX_READ = 500
#: Most series a statistic's page reads: each slice it reads is a histogram to parse and merge.
MAX_READ_STATISTIC = 200
#: Most filter values a page takes (``?view=a&view=b...``).
MAX_FILTERS = 50
#: Query parameters the chart pages use themselves: a label of one of these names is filtered
#: as ``?filter.<label>=value`` (a label is an identifier, so that never collides).
RESERVED = frozenset(
    {"name", "precision", "start", "end", "compare", "points", "format", "by", "o", "q", "p"}
)
#: The legend and table name of the values beyond the top ones.
OTHERS = "others"


def filter_param(label: str) -> str:
    """The query parameter filtering by ``label``'s values."""
    return f"filter.{label}" if label in RESERVED else label


def listing_op(metric: Metric) -> Op:
    """The request listing ``metric``'s series, sent with its page's first read."""
    low, high = series_range(metric.name)
    return Op("zrangebylex", catalogue_key(metric.KIND), low, high, start=0, num=MAX_LISTED + 1)


def find(model: type[M], name: str) -> M:
    """The metric ``name`` as stored; a labelled metric (its own keys hold nothing) configured as
    its first series was stored. ``Http404`` if neither holds data."""
    try:
        return model.objects.get(name)  # type: ignore[attr-defined,no-any-return]
    except LookupError as exc:
        missing = exc
    try:
        return drive(_configured_steps(model, name))
    except LookupError:
        raise Http404(str(missing)) from None


def _configured_steps(model: type[M], name: str) -> Steps[M]:
    """``name`` configured as its first series' meta hash says (``LookupError``: no series)."""
    low, high = series_range(name)
    first = yield Op("zrangebylex", catalogue_key(model.KIND), low, high, start=0, num=1)
    if not first:
        raise LookupError(name)
    meta = yield Op("hgetall", metric_key(model.KIND, to_str(first[0]), "meta"))
    return model.from_meta(name, meta)


@dataclass
class Choice:
    """What the query string asks of the breakdown: the label to group by, the filters (label
    -> accepted values) and the table's order (``?o=-total``)."""

    labels: tuple[str, ...]
    by: str
    filters: dict[str, tuple[str, ...]]
    explicit_by: bool = False

    def accepts(self, pairs: Sequence[tuple[str, str]]) -> bool:
        found = dict(pairs)
        return all(found.get(label) in values for label, values in self.filters.items())

    def pairs(self) -> list[tuple[str, str]]:
        """The query pairs that keep this choice in a link (group-by and filters)."""
        kept = [("by", self.by)] if self.explicit_by else []
        for label, values in self.filters.items():
            kept += [(filter_param(label), value) for value in values]
        return kept


def label_names(metric: Metric, members: Sequence[str]) -> tuple[str, ...]:
    """The metric's labels: as declared, else as its series name them (in their order)."""
    if metric.label_names:
        return metric.label_names
    names: dict[str, None] = {}
    for member in members:
        for label, _ in split(member).labels:
            names.setdefault(label)
    return tuple(names)


def chosen(params: QueryDict, labels: tuple[str, ...]) -> Choice:
    """The breakdown the query string asks for (``Http404`` for an unknown ``?by=``)."""
    raw = params.get("by")
    if raw and raw not in labels:
        raise Http404(f"by must be one of the labels {', '.join(labels)}.")
    filters = {
        label: tuple(dict.fromkeys(v for v in params.getlist(filter_param(label)) if v))
        for label in labels
    }
    filters = {label: values for label, values in filters.items() if values}
    if sum(len(values) for values in filters.values()) > MAX_FILTERS:
        raise Http404(f"At most {MAX_FILTERS} filter values are taken.")
    return Choice(labels, raw or labels[0], filters, explicit_by=bool(raw))


@dataclass
class Found:
    """The stored texts of the series a page reads: ``groups`` maps each value of the chosen
    label to one list of texts per series; ``rest`` holds the ``__other__`` series' (read only
    without filters: it has no labels to match)."""

    choice: Choice
    groups: dict[str, list[list[Any]]]
    rest: list[list[Any]]
    listed: int
    matched: int
    notes: list[str] = field(default_factory=list)

    @property
    def read(self) -> int:
        return sum(len(texts) for texts in self.groups.values()) + len(self.rest)


def read(
    metric: M,
    members: Sequence[Any],
    params: QueryDict,
    key: str | int,
    fields: list[int],
    limit: int | None = None,
) -> Found:
    """The texts of ``fields`` in the hash ``key`` (a precision) of each series chosen by the
    query string: one pipelined round (the gather driver), at most ``limit`` series (default:
    ``MAX_READ``)."""
    limit = MAX_READ if limit is None else limit
    names = [to_str(member) for member in members[:MAX_LISTED]]
    choice = chosen(params, label_names(metric, names))
    notes = []
    if len(members) > MAX_LISTED:
        notes.append(
            f"This metric lists more than {MAX_LISTED:,} series: the breakdown covers the first "
            f"{MAX_LISTED:,} by name."
        )
    chosen_series: list[tuple[str | None, SlicedMetric]] = []
    matched = 0
    for name in names:
        parsed = split(name)
        if parsed.other:
            if not choice.filters:
                matched += 1
                chosen_series.append((None, metric.series_for((), other=True)))
            continue
        if not choice.accepts(parsed.labels):
            continue
        matched += 1
        chosen_series.append((parsed.label_dict().get(choice.by), metric.series_for(parsed.labels)))
    if len(chosen_series) > limit:
        notes.append(
            f"{matched:,} series match: the breakdown reads the first {limit:,} by name. "
            "Filter by a label's value to see the others."
        )
        chosen_series = chosen_series[:limit]
    reads = [_hmget(series.key(int(key)), fields) for _, series in chosen_series]
    full = any(split(name).other for name in names)
    if full:  # how many label sets the cap sent to __other__, read in the same round
        reads.append(_hget(metric.other_series().meta_key, OVERFLOW_FIELD))
    answers = gather(reads)
    if full:
        overflow = answers.pop()
        refused = 0 if isinstance(overflow, Exception) or overflow is None else int(overflow)
        notes.append(
            f"This metric reached its max_series: {refused:,} more label sets were written to "
            f"its {OTHER} series (each counted once per process)."
        )
    groups: dict[str, list[list[Any]]] = {}
    rest: list[list[Any]] = []
    for (value, _), texts in zip(chosen_series, answers, strict=True):
        if isinstance(texts, Exception):
            raise texts
        if value is None:
            rest.append(texts)
        else:
            groups.setdefault(value, []).append(texts)
    return Found(choice, groups, rest, len(names), matched, notes)


def _hget(key: str, field: str) -> Steps[Any]:
    return (yield Op("hget", key, field))


def _hmget(key: str, fields: list[int]) -> Steps[list[Any]]:
    return list((yield Op("hmget", key, fields)))


def top_values(totals: Mapping[str, float]) -> list[str]:
    """The ``TOP`` values with the largest totals (ties by value)."""
    return sorted(totals, key=lambda value: (-totals[value], value))[:TOP]


# The table


@dataclass
class Row:
    """One row of the breakdown table: a label value (or "others") and its figures."""

    value: str
    figures: dict[str, float | None]
    url: str = ""
    others: bool = False
    #: ``(column, figure)`` in the table's order, shares in percent (made by ``table``).
    cells: list[tuple[str, float | None]] = field(default_factory=list)


@dataclass
class Table:
    """The breakdown's table and controls, as the template shows them."""

    by: str
    rows: list[Row]
    others: Row | None
    columns: list[dict[str, Any]]
    group_links: list[tuple[str, str, bool]]
    filters: list[tuple[str, str, str]]
    filter_fields: list[tuple[str, str]]
    hidden: list[tuple[str, str]]
    listed: int
    matched: int
    read: int
    notes: list[str]


def page_url(request: HttpRequest, changes: dict[str, list[str] | None]) -> str:
    """This page's URL with the parameters of ``changes`` replaced (``None``: removed)."""
    query = request.GET.copy()
    for key, values in changes.items():
        if values is None:
            query.pop(key, None)
        else:
            query.setlist(key, values)
    return f"{request.path}?{query.urlencode()}"


def extended(url: str, pairs: Sequence[tuple[str, str]]) -> str:
    """``url`` (which has a query string) carrying ``pairs`` too."""
    return f"{url}&{urlencode(pairs)}" if pairs else url


def table(
    request: HttpRequest,
    found: Found,
    rows: list[Row],
    others: Row | None,
    columns: Sequence[tuple[str, str]],
    default_order: str,
) -> Table:
    """The table of ``rows`` sorted as ``?o=`` asks (``others`` last), its sortable headings,
    the group-by links and the filters, every link keeping the page's other parameters."""
    choice = found.choice
    keys = [key for key, _ in columns]
    raw = request.GET.get("o") or default_order
    key = raw.lstrip("-")
    if key not in keys:
        raw, key = default_order, default_order.lstrip("-")
    descending = raw.startswith("-")
    known = [row for row in rows if _sort_value(row, key) is not None]
    unknown = [row for row in rows if _sort_value(row, key) is None]
    known.sort(key=lambda row: row.value)
    known.sort(key=lambda row: _sort_value(row, key), reverse=descending)
    headings = []
    for column, text in columns:
        current = column == key
        flip = not descending if current else column != "value"
        headings.append(
            {
                "key": column,
                "text": text,
                "url": page_url(request, {"o": [("-" if flip else "") + column]}),
                "sorted": ("descending" if descending else "ascending") if current else "",
            }
        )
    by_param = filter_param(choice.by)
    for row in known + unknown:
        row.url = page_url(request, {by_param: [row.value]})
    for row in [*known, *unknown, *([others] if others else [])]:
        row.cells = [(key, _percent(row.figures.get(key), key)) for key in keys if key != "value"]
    filters = []
    for label, accepted in choice.filters.items():
        for value in accepted:
            left = [v for v in accepted if v != value]
            filters.append((label, value, page_url(request, {filter_param(label): left or None})))
    hidden = [(k, v) for k, values in request.GET.lists() for v in values if v]
    return Table(
        by=choice.by,
        rows=known + unknown,
        others=others,
        columns=headings,
        group_links=[
            (label, page_url(request, {"by": [label], "o": None}), label == choice.by)
            for label in choice.labels
        ],
        filters=filters,
        filter_fields=[(label, filter_param(label)) for label in choice.labels],
        hidden=hidden,
        listed=found.listed,
        matched=found.matched,
        read=found.read,
        notes=found.notes,
    )


def _percent(figure: float | None, key: str) -> float | None:
    return figure * 100 if key == "share" and figure is not None else figure


def _sort_value(row: Row, key: str) -> Any:
    return row.value if key == "value" else row.figures.get(key)


def line_label(label: str, value: str) -> str:
    """A breakdown line's legend (and CSV heading): ``view=home``."""
    return f"{label}={value}"


def summed(texts: Sequence[Sequence[Any]], size: int) -> list[int]:
    """Per slice, the sum of several series' stored counts (``int`` reads Redis' bytes as
    they come)."""
    totals = [0] * size
    for values in texts:
        for i, value in enumerate(values):
            if value is not None:
                totals[i] += int(value)
    return totals
