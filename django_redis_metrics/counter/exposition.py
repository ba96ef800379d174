"""The counters' Prometheus families: one per counter, a sample per series, from its lifetime
total (the net sum of its increments since it was first written, never trimmed). The shards of
a counter declared with ``shards=`` (``core/shards.py``) are one sample: their totals added."""

from __future__ import annotations

from ..core.shards import SHARD_LABEL
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
        totals: dict[tuple[tuple[str, str], ...], int] = {}
        for labels, answer in zip(series.labels, series.answers, strict=True):
            key = tuple((k, v) for k, v in labels.items() if k != SHARD_LABEL)
            totals[key] = totals.get(key, 0) + int(answer)
        draft.suffixes = ["_total"] * len(totals)
        draft.labels = [dict(key) for key in totals]
        draft.values = [total for total in totals.values()]
        drafts.append(draft)
    return drafts
