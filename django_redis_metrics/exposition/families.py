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

from ..core.keys import catalogue_key, metric_key, to_str
from ..core.labelling import OTHER, SeriesName, split
from ..core.steps import Op, Steps

#: Prefix of every family this app exposes.
NAMESPACE = "django_redis_metrics"
#: Catalogue members read per ``ZRANGEBYLEX`` (one round trip each, about 1 ms of Redis time
#: per 10,000: a scrape never blocks Redis for long whatever the catalogue's size).
PAGE = 10_000

#: One sample: the suffix of its name after the family's (``"_total"``, ``"_bucket"``, ``""``),
#: its labels and its value.
Sample = tuple[str, dict[str, str], float]

#: The sample name suffixes of each family type, in the text format and in OpenMetrics.
SUFFIXES: dict[str, tuple[str, ...]] = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_sum", "_count", "_created"),
}


@dataclass
class Draft:
    """The family of one metric, before its name is claimed: its type, help text and samples."""

    #: The metric's name (as written, before sanitising).
    metric: str
    #: The kind it is of (the catalogue's): ``counter``, ``gauge``, ...
    kind: str
    #: ``counter``, ``gauge`` or ``histogram``.
    type: str
    documentation: str
    samples: list[Sample] = field(default_factory=list)


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


def metrics(members: Iterable[str], answers: Iterable[Any]) -> Iterator[tuple[str, Series]]:
    """Each metric's name with its series: ``(labels, answer)`` of every member read, in
    member order; a member whose answer is an error reply (a key of another type under the
    app's prefix) or ``None`` (retired meanwhile) is left out. The ``__other__`` series of a
    labelled metric gets the labels of its siblings, each reading ``__other__`` (left out
    when it has none listed: its label names are unknown then)."""
    grouped: dict[str, Series] = {}
    others: dict[str, Any] = {}
    for member, answer in zip(members, answers, strict=True):
        if answer is None or isinstance(answer, Exception):
            continue
        name: SeriesName = split(member)
        if name.other:
            others[name.name] = answer
            continue
        grouped.setdefault(name.name, Series()).add(dict(name.labels), answer)
    for metric, answer in others.items():
        series = grouped.get(metric)
        if series is not None and series.label_names:
            series.add(dict.fromkeys(series.label_names, OTHER), answer)
    yield from grouped.items()


@dataclass
class Series:
    """The series of one metric read in a scrape: each one's labels and what was read."""

    items: list[tuple[dict[str, str], Any]] = field(default_factory=list)
    label_names: tuple[str, ...] = ()

    def add(self, labels: dict[str, str], answer: Any) -> None:
        if labels and not self.label_names:
            self.label_names = tuple(labels)
        self.items.append((labels, answer))


def renamed(labels: dict[str, str], reserved: str) -> dict[str, str]:
    """``labels`` with a label named ``reserved`` (one the family adds itself, as ``le`` or
    ``period``) renamed ``exported_<reserved>``, as Prometheus renames a scraped label that
    clashes with one it sets."""
    if reserved not in labels:
        return labels
    return {(f"exported_{k}" if k == reserved else k): v for k, v in labels.items()}
