"""The counters' Prometheus families: one per counter, a sample per series, from its lifetime
total (the net sum of its increments since it was first written, never trimmed)."""

from __future__ import annotations

from ..core.steps import Steps
from ..exposition.families import Draft, catalogue_steps, meta_steps, metrics
from .keys import KIND
from .model import LIFETIME_FIELD


def counter_families() -> Steps[list[Draft]]:
    members = yield from catalogue_steps(KIND)
    answers = yield from meta_steps(KIND, members, LIFETIME_FIELD)
    drafts = []
    for name, series in metrics(members, answers):
        draft = Draft(
            name,
            KIND,
            "counter",
            f"Counter {name!r}: the net sum of its increments since it was first written.",
        )
        draft.suffixes = ["_total"] * len(series.labels)
        draft.labels = series.labels
        draft.values = [int(answer) for answer in series.answers]
        drafts.append(draft)
    return drafts
