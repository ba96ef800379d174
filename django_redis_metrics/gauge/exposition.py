"""The gauges' Prometheus families: one per gauge, a sample per series, its latest value."""

from __future__ import annotations

from ..core.keys import to_str
from ..core.steps import Steps
from ..exposition.families import Draft, catalogue_steps, meta_steps, metrics
from .keys import KIND
from .model import LATEST


def gauge_families() -> Steps[list[Draft]]:
    members = yield from catalogue_steps(KIND)
    answers = yield from meta_steps(KIND, members, LATEST)
    drafts = []
    for name, series in metrics(members, answers):
        draft = Draft(name, KIND, "gauge", f"Gauge {name!r}: the latest value set.")
        draft.suffixes = [""] * len(series.labels)
        draft.labels = series.labels
        draft.values = [latest(answer) for answer in series.answers]
        drafts.append(draft)
    return drafts


def latest(answer: bytes | str) -> float:
    """The value of a gauge's stored ``when,value``."""
    return float(to_str(answer).rpartition(",")[2])
