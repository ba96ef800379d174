"""What the kinds' Prometheus families share: the namespace, the catalogue read, the keys of
every series, and the :class:`Draft` each metric's family is before its name is claimed.

Each kind reads its series and drafts one family per metric (``counter/exposition.py``, ...)
as a generator of steps; the collector runs every kind's together (the gather driver), then
names the families (``names.py``) and builds them for ``prometheus_client`` to render.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..core.catalogue import inline_catalogue
from ..core.connection import get_redis_connection
from ..core.keys import catalogue_key, metric_key, to_str
from ..core.labels.labelling import OTHER, SEPARATOR
from ..core.scripts import ScriptLibrary
from ..core.steps import Op, Pipe, Script, Steps

#: Prefix of every family this app exposes.
NAMESPACE = "django_redis_metrics"
#: Catalogue members read per ``ZRANGEBYLEX`` (one round trip each, about 1.3 ms of Redis time
#: per 10,000: a scrape never blocks Redis for long whatever the catalogue's size).
PAGE = 10_000

#: Meta hashes one script call reads on a single node (``lua/exposition_read.lua``): about
#: 1 ms of Redis time per call (other clients are served between calls), 100 calls a pipeline.
SCRIPT_KEYS = 1_000

script = ScriptLibrary(__name__.rpartition(".")[0])

#: The sample name suffixes of each family type, in the text format and in OpenMetrics.
SUFFIXES: dict[str, tuple[str, ...]] = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
}


@dataclass
class Draft:
    """The family of one metric, before its name is claimed: its type, help text and samples,
    each sample as its name's suffix after the family's (``"_total"``, ``"_bucket"``,
    ``""``), its labels and its value, in three parallel lists (a tuple per sample would be
    100,000 more objects for the garbage collector to walk in a large scrape)."""

    #: The metric's name (as written, before sanitising).
    metric: str
    #: The kind it is of (the catalogue's): ``counter``, ``gauge``, ...
    kind: str
    #: ``counter``, ``gauge`` or ``histogram``.
    type: str
    documentation: str
    suffixes: list[str] = field(default_factory=list)
    labels: list[dict[str, str]] = field(default_factory=list)
    values: list[float] = field(default_factory=list)

    def add(self, suffix: str, labels: dict[str, str], value: float) -> None:
        self.suffixes.append(suffix)
        self.labels.append(labels)
        self.values.append(value)


def catalogue_steps(kind: str, page: int = PAGE) -> Steps[list[str]]:
    """Every member of ``kind``'s catalogue (names and series names), ``page`` a round trip,
    in name order (safe while it changes: a page starts after the last member of the one
    before)."""
    key, start = catalogue_key(kind), "-"
    members: list[str] = []
    while True:
        chunk = yield Op("zrangebylex", key, start, "+", start=0, num=page)
        members += [to_str(raw) for raw in chunk]
        if len(chunk) < page:
            return members
        start = "(" + members[-1]


def meta_keys(kind: str, members: Iterable[str]) -> list[str]:
    """The meta hash key of each member (``metric_key(kind, member, "meta")``, its template
    read once rather than the settings once a member)."""
    head, _, tail = metric_key(kind, "\0", "meta").partition("\0")
    return [f"{head}{member}{tail}" for member in members]


def meta_steps(kind: str, members: list[str], field: str | None) -> Steps[list[Any]]:
    """Each member's meta hash ``field`` (``None``: every field, as a dict), in order; ``None``
    for a hash that is gone or a key of another type. On a single node, by one script call
    per ``SCRIPT_KEYS`` hashes (the bulk of a scrape's Redis time and of its parsing: one
    reply per call rather than per hash); on Redis Cluster, one pipelined command each."""
    keys = meta_keys(kind, members)
    if not keys:
        return []
    if not inline_catalogue(get_redis_connection()):
        ops = [Op("hget", key, field) if field else Op("hgetall", key) for key in keys]
        replies = yield Pipe(ops, raise_on_error=False)
        return [None if isinstance(r, Exception) or not r else r for r in replies]
    read = script("exposition_read")
    calls = [
        Script(read, keys[at : at + SCRIPT_KEYS], [field or ""])
        for at in range(0, len(keys), SCRIPT_KEYS)
    ]
    found: list[Any] = []
    for reply in (yield Pipe(calls)):
        found += reply if field else [_pairs(flat) for flat in reply]
    return found


def _pairs(flat: list[Any]) -> dict[bytes, Any] | None:
    """An ``HGETALL`` reply given as one flat list, as a dict (``None`` when empty)."""
    if not flat:
        return None
    items = iter(flat)
    return dict(zip(items, items, strict=True))


def metrics(members: Iterable[str], answers: Iterable[Any]) -> Iterator[tuple[str, Series]]:
    """Each metric's name with its series: ``(labels, answer)`` of every member read, in
    member order (``labelling.split``, inlined: it runs once a series); a member whose answer
    is ``None`` (gone meanwhile, or a key of another type) is left out. The ``__other__``
    series of a labelled metric gets the labels of its siblings, each reading ``__other__``
    (left out when it has none listed: its label names are unknown then)."""
    grouped: dict[str, Series] = {}
    others: dict[str, Any] = {}
    for member, answer in zip(members, answers, strict=True):
        if answer is None or isinstance(answer, Exception):
            continue
        name, _, rest = member.partition(SEPARATOR)
        if rest == OTHER:
            others[name] = answer
            continue
        labels: dict[str, str] = {}
        if rest:
            for part in rest.split(SEPARATOR):
                label, _, value = part.partition("=")
                labels[label] = value
        series = grouped.get(name)
        if series is None:
            series = grouped[name] = Series()
        series.add(labels, answer)
    for metric, answer in others.items():
        series = grouped.get(metric)
        if series is not None and series.label_names:
            series.add(dict.fromkeys(series.label_names, OTHER), answer)
    yield from grouped.items()


@dataclass
class Series:
    """The series of one metric read in a scrape: each one's labels and what was read."""

    labels: list[dict[str, str]] = field(default_factory=list)
    answers: list[Any] = field(default_factory=list)
    label_names: tuple[str, ...] = ()

    def add(self, labels: dict[str, str], answer: Any) -> None:
        if labels and not self.label_names:
            self.label_names = tuple(labels)
        self.labels.append(labels)
        self.answers.append(answer)


def renamed(labels: dict[str, str], reserved: str) -> dict[str, str]:
    """``labels`` with a label named ``reserved`` (one the family adds itself, as ``le`` or
    ``period``) renamed ``exported_<reserved>``, as Prometheus renames a scraped label that
    clashes with one it sets."""
    if reserved not in labels:
        return labels
    return {(f"exported_{k}" if k == reserved else k): v for k, v in labels.items()}
