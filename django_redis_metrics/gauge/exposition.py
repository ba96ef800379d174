"""The gauges' Prometheus families: one per gauge, a sample per series, its latest value."""

from __future__ import annotations

from ..core.keys import to_str
from ..core.steps import Op, Pipe, Steps
from ..exposition.families import Draft, catalogue_steps, meta_keys, metrics
from .keys import KIND
from .model import LATEST


def gauge_families() -> Steps[list[Draft]]:
    members = yield from catalogue_steps(KIND)
    reads = [Op("hget", key, LATEST) for key in meta_keys(KIND, members)]
    answers = (yield Pipe(reads, raise_on_error=False)) if reads else []
    drafts = []
    for name, series in metrics(members, answers):
        draft = Draft(name, KIND, "gauge", f"Gauge {name!r}: the latest value set.")
        draft.samples = [("", labels, latest(answer)) for labels, answer in series.items]
        drafts.append(draft)
    return drafts


def latest(answer: bytes | str) -> float:
    """The value of a gauge's stored ``when,value``."""
    return float(to_str(answer).rpartition(",")[2])
