"""Where the admin finds the middleware's per-view metrics, for the Views page and the tiles.

The middleware writes two labelled metrics: the ``Counter`` ``HITS_COUNTER`` (``hits``), one
series per ``view`` and ``status`` class, and the ``Statistic`` ``LATENCY_STATISTIC``
(``latency``), one series per ``view``. Their series are catalogue members (``hits\\x1fview=
home\\x1fstatus=2xx``), found by one prefix lookup each.

The versions before labels wrote plain metrics per view instead (``hits:{view}``,
``status:{view}:{class}``, ``latency:{view}``). So that the pages do not lose what a site
recorded before it upgraded, those names are read too while the middleware no longer writes
them (their template, ``VIEW_COUNTER``, ``VIEW_STATUS`` or ``VIEW_TIMER``, is ``None``, the
default): they then hold only requests from before the upgrade and add to the series without
counting any request twice, until their retention ends. A site that keeps a template set
writes both for every request, so the pages read the labelled series alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..conf import conf
from ..core.base import Metric
from ..core.labels.labelling import OTHER, SEPARATOR, split
from ..counter import Counter
from ..statistic import Statistic
from .tilebase import Lookup, chart_query

__all__ = ["chart_query"]  # the chart page of a per-view metric, made where the links are

#: The names the versions before labels wrote by default, read while no longer written.
LEGACY_COUNTER = "hits:{view}"
LEGACY_STATUS = "status:{view}:{class}"
LEGACY_TIMER = "latency:{view}"
#: Where the per-view metrics come from.
LABELLED, LEGACY = "labelled", "legacy"


@dataclass(frozen=True, order=True)
class PerView:
    """One stored metric of one view: ``role`` is ``"status"`` (answers of one ``status``
    class), ``"hits"`` (requests, no class known) or ``"timer"`` (response times in ms)."""

    view: str
    role: str
    status: str
    kind: str
    name: str
    source: str

    @property
    def model(self) -> type[Metric]:
        return Statistic if self.kind == Statistic.KIND else Counter


def name_pattern(template: str, **groups: str) -> tuple[str, re.Pattern[str]]:
    """The literal prefix of a name template (``hits:{view}`` -> ``hits:``), and a regular
    expression matching the names it makes, with a group per placeholder."""
    prefix = template.split("{", 1)[0]
    pattern = re.escape(template)
    for group, regex in groups.items():
        pattern = pattern.replace(re.escape("{" + group + "}"), f"(?P<{group}>{regex})")
    return prefix, re.compile(pattern + r"\Z")


def _legacy() -> list[tuple[str, str, re.Pattern[str], str]]:
    """``(role, kind, pattern, prefix)`` of each name before labels that is no longer written."""
    found = []
    if conf.VIEW_STATUS is None:
        prefix, pattern = name_pattern(LEGACY_STATUS, view=".+", **{"class": "[1-5]xx"})
        found.append(("status", Counter.KIND, pattern, prefix))
    if conf.VIEW_COUNTER is None:
        prefix, pattern = name_pattern(LEGACY_COUNTER, view=".+")
        found.append(("hits", Counter.KIND, pattern, prefix))
    if conf.VIEW_TIMER is None:
        prefix, pattern = name_pattern(LEGACY_TIMER, view=".+")
        found.append(("timer", Statistic.KIND, pattern, prefix))
    return found


def _labelled() -> list[tuple[str, str, str]]:
    """``(role, kind, metric name)`` of the labelled metrics turned on."""
    found = []
    if conf.HITS_COUNTER is not None:
        found.append(("status", Counter.KIND, conf.HITS_COUNTER))
    if conf.LATENCY_STATISTIC is not None:
        found.append(("timer", Statistic.KIND, conf.LATENCY_STATISTIC))
    return found


def lookups(roles: frozenset[str] = frozenset({"hits", "status", "timer"})) -> list[Lookup]:
    """The catalogue prefixes holding the per-view metrics of ``roles``."""
    found = [Lookup(kind, name + SEPARATOR) for role, kind, name in _labelled() if role in roles]
    found += [Lookup(kind, prefix) for role, kind, _, prefix in _legacy() if role in roles]
    return sorted(set(found))


def per_view(
    found: Mapping[Lookup, list[str]],
    roles: frozenset[str] = frozenset({"hits", "status", "timer"}),
) -> list[PerView]:
    """Every per-view metric of ``roles`` among the names the :func:`lookups` found, sorted by
    view. A view's old ``hits:{view}`` is left out when its old status counters count the same
    requests, so that a view's requests are the sum of its ``status`` and ``hits`` entries."""
    entries: list[PerView] = []
    for role, kind, name in _labelled():
        if role not in roles:
            continue
        for member in found.get(Lookup(kind, name + SEPARATOR), []):
            parsed = split(member)
            labels = parsed.label_dict()
            if parsed.other:  # label sets past max_series: view and class unknown
                other_role = "hits" if role == "status" else role
                if other_role in roles:
                    entries.append(PerView(OTHER, other_role, "", kind, member, LABELLED))
            elif "view" in labels:
                status = labels.get("status", "")
                if role == "status" and not status:
                    continue
                entries.append(PerView(labels["view"], role, status, kind, member, LABELLED))
    legacy_status_views = set()
    for role, kind, pattern, prefix in _legacy():
        if role not in roles:
            continue
        for member in found.get(Lookup(kind, prefix), []):
            match = pattern.match(member)
            if match is None:
                continue
            status = match.group("class") if role == "status" else ""
            if role == "status":
                legacy_status_views.add(match.group("view"))
            entries.append(PerView(match.group("view"), role, status, kind, member, LEGACY))
    return sorted(
        entry
        for entry in entries
        if not (
            entry.source == LEGACY and entry.role == "hits" and entry.view in legacy_status_views
        )
    )


#: The roles giving a view's requests: its answers per status class, else its hits.
REQUESTS = frozenset({"hits", "status"})


def from_meta(model: type[Any], name: str, meta: Mapping[Any, Any]) -> Any:
    """The metric (or series) ``name`` of ``model`` configured as its meta hash says; a
    series is made from its metric's name and its labels (a series name is no metric name)."""
    parsed = split(name)
    if not parsed.is_series:
        return model.from_meta(name, meta)
    family = model.from_meta(parsed.name, meta)
    return family.series_for(parsed.labels, other=parsed.other)
