"""The families of the kinds counted per calendar period (bitmaps, estimates): one gauge per
metric, a sample per series and period it keeps, counting that period as it stands now."""

from __future__ import annotations

from collections.abc import Callable

from ..core.keys import metric_key, to_str
from ..core.periodic import DEFAULT_PERIODS
from ..core.periods import PERIOD_NAMES, period_class
from ..core.steps import Op, Pipe, Steps
from .families import Draft, catalogue_steps, meta_steps, metrics, renamed

#: The label a periodic family adds; a metric's own label of that name is exported_period.
PERIOD = "period"


def periodic_families(
    kind: str, count: Callable[[str], Op], documentation: str
) -> Steps[list[Draft]]:
    """The drafts of ``kind``: its catalogue, each series' periods (its meta hash), then
    ``count(key)`` of the current period of each (three round trips in all, pipelined)."""
    members = yield from catalogue_steps(kind)
    stored = yield from meta_steps(kind, members, "periods")
    current = {name: period_class(name).containing(None).suffix for name in PERIOD_NAMES}
    wanted: list[tuple[str, str]] = []
    for member, periods in zip(members, stored, strict=True):
        if periods is None or isinstance(periods, Exception):
            continue  # retired meanwhile, or a key of another type
        for period in kept_periods(periods):
            wanted.append((member, period))
    ops = [count(metric_key(kind, m, p, current[p])) for m, p in wanted]
    counts = (yield Pipe(ops, raise_on_error=False)) if ops else []
    by_member: dict[str, list[tuple[str, int]]] = {}
    for (member, period), found in zip(wanted, counts, strict=True):
        if not isinstance(found, Exception):
            by_member.setdefault(member, []).append((period, int(found)))
    listed = list(by_member)
    drafts = []
    for name, series in metrics(listed, [by_member[m] for m in listed]):
        draft = Draft(name, kind, "gauge", documentation.format(name=name))
        for labels, periods in zip(series.labels, series.answers, strict=True):
            own = renamed(labels, PERIOD)
            for period, users in periods:
                draft.add("", {**own, PERIOD: period}, users)
        drafts.append(draft)
    return drafts


def kept_periods(stored: bytes | str) -> list[str]:
    """The periods a meta hash's ``periods`` field names (the defaults when it names none)."""
    names = [p for p in to_str(stored).split(",") if p in PERIOD_NAMES]
    return names or list(DEFAULT_PERIODS)
