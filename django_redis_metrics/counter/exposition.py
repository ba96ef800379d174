"""The counters' Prometheus families: one per counter, a sample per series, from its lifetime
total (the net sum of its increments since it was first written, never trimmed)."""

from __future__ import annotations

from ..core.steps import Op, Pipe, Steps
from ..exposition.families import Draft, catalogue_steps, meta_keys, metrics
from .keys import KIND
from .model import LIFETIME_FIELD


def counter_families() -> Steps[list[Draft]]:
    members = yield from catalogue_steps(KIND)
    reads = [Op("hget", key, LIFETIME_FIELD) for key in meta_keys(KIND, members)]
    answers = (yield Pipe(reads, raise_on_error=False)) if reads else []
    drafts = []
    for name, series in metrics(members, answers):
        draft = Draft(
            name,
            KIND,
            "counter",
            f"Counter {name!r}: the net sum of its increments since it was first written.",
        )
        draft.samples = [("_total", labels, int(answer)) for labels, answer in series.items]
        drafts.append(draft)
    return drafts
