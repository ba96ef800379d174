"""What a dashboard tile is: three steps, each folded into one pipeline shared by every tile.

1. ``lookups()``: catalogue names by prefix (``hits`` and the label separator find the series
   of ``hits``);
2. ``wants(found)``: the metrics whose stored configuration (precisions, periods) it needs;
3. ``queue(reads, metrics, env)``: its reads, returning how to turn their replies into the
   context of its template.

So the dashboard costs three round trips whatever its tiles and however many metrics they read.
A tile of your own subclasses :class:`Tile` and is named in ``DASHBOARD`` by its dotted path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from django.urls import reverse

from ..core.base import Metric
from ..core.labels.labelling import split
from ..core.steps import Op
from ..core.validation import shown
from .breakdown import filter_param
from .common import with_query

#: The metrics the tiles wanted, by ``(kind, name)``; ``None`` when nothing is stored.
Metrics = Mapping[tuple[str, str], Metric | None]
#: A tile's last step: the replies of the reads it queued (by their numbers) -> its context.
Finish = Callable[[Sequence[Any]], dict[str, Any]]


@dataclass(frozen=True, order=True)
class Lookup:
    """The catalogued names of ``kind`` starting with ``prefix`` (all of them for ``""``)."""

    kind: str
    prefix: str


class Reads:
    """Collects the tiles' reads for one shared pipeline; each read's number finds its reply."""

    def __init__(self) -> None:
        self.ops: list[Op] = []

    def __call__(self, command: str, *args: Any) -> int:
        self.ops.append(Op(command, *args))
        return len(self.ops) - 1


class Links:
    """URLs of the metrics pages, so that every number on the dashboard links to its chart."""

    def __init__(self, site_name: str) -> None:
        def url(model: str, suffix: str) -> str:
            return reverse(f"{site_name}:django_redis_metrics_{model}_{suffix}")

        self.counter_url = url("countermetric", "chart")
        self.counter_data_url = url("countermetric", "data")
        self.series_url = url("eventseriesmetric", "detail")
        self.bitmap_url = url("uniquebitmapmetric", "detail")

    def counter(self, name: str, **query: Any) -> str:
        """The chart of counter ``name``; of a series, its metric's chart filtered by its
        labels."""
        return with_query(self.counter_url, **chart_query(name), **query)

    def counter_data(self, name: str, **query: Any) -> str:
        return with_query(self.counter_data_url, **chart_query(name), **query)

    def series(self, name: str, **query: Any) -> str:
        return with_query(self.series_url, name=name, **query)

    def bitmap(self, name: str, **query: Any) -> str:
        return with_query(self.bitmap_url, name=name, **query)


@dataclass
class Env:
    """What every tile reads at the same moment."""

    now: float
    links: Links
    #: The names each tile's ``lookups()`` found.
    found: Mapping[Lookup, list[str]]


class Tile:
    """One box of the dashboard. Subclasses set ``name``, ``title`` and ``template`` and
    override the steps they need; options come from ``DASHBOARD``'s ``{"tile": ..., **options}``
    and an unknown option is a ``TypeError``."""

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    template: ClassVar[str] = "django_redis_metrics/admin/tiles/unavailable.html"

    def __init__(self, **options: Any) -> None:
        if options:
            raise TypeError(
                f"The {self.name or type(self).__name__!r} dashboard tile takes no option "
                f"{', '.join(sorted(options))}."
            )

    def lookups(self) -> list[Lookup]:
        return []

    def wants(self, found: Mapping[Lookup, list[str]]) -> list[tuple[type[Metric], str]]:
        return []

    def queue(self, reads: Reads, metrics: Metrics, env: Env) -> Finish:
        raise NotImplementedError


def chart_query(name: str) -> dict[str, str]:
    """The query of the chart page showing ``name``: a series is its metric's page filtered by
    its labels (``?name=hits&view=home&status=2xx``, see ``breakdown.py``); a metric's
    ``__other__`` series, the metric's whole page."""
    parsed = split(name)
    if not parsed.is_series:
        return {"name": name}
    return {"name": parsed.name, **{filter_param(k): v for k, v in parsed.labels}}


def limit_option(value: object) -> int:
    """A tile's ``limit`` (rows shown): a positive int up to 100."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"A tile's limit must be an int, not {shown(value)}.")
    if not 1 <= value <= 100:
        raise ValueError(f"A tile's limit must be 1 to 100, not {value}.")
    return value
