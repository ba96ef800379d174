"""The statistics' Prometheus families: one histogram per statistic, a histogram per series.

Built from the lifetime histogram each series keeps in its meta hash (``statistic_record.lua``:
``b<bucket>`` the values of each log-scale bucket since the statistic was first written,
never trimmed, with ``n`` and ``s`` the count and sum), so the exposed buckets are cumulative
and only grow from one scrape to the next, as ``rate()`` and ``histogram_quantile`` need. The
per-slice histograms would not do: their slices are trimmed, which Prometheus would read as
counter resets.

Each bucket holding values is exposed with its bounds (``histogram.py``: the magnitudes
``(g^(k-1), g^k]``, ``g = 2^(1/8)``): ``le`` at its upper bound, and at its lower bound too
when the bucket below it holds nothing, so ``histogram_quantile``'s linear interpolation never
spans more than one bucket. The quantile it gives lies in the bucket holding the exact one,
within :data:`QUANTILE_ERROR` (``g - 1``, 9.05 %) of it; ``Statistic.percentile`` estimates
at the bucket's geometric middle, within 4.33 %. ``+Inf`` and ``_count`` are every value
recorded (values recorded before the lifetime histogram existed, or in a bucket past the
``LIFETIME_BUCKETS`` kept, count only there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client.utils import floatToGoString

from ..core.keys import to_str
from ..core.steps import Op, Pipe, Steps
from ..exposition.families import Draft, Sample, catalogue_steps, meta_keys, metrics, renamed
from .histogram import GAMMA, OFFSET, PER_DOUBLING
from .keys import KIND

#: Most lifetime buckets a series keeps (as ``statistic_record.lua``'s ``LIFETIME_BUCKETS``).
LIFETIME_BUCKETS = 192
#: How far ``histogram_quantile`` of the exposed buckets may be from the exact quantile,
#: relative to it (the width of one bucket: about 9.05 %).
QUANTILE_ERROR = GAMMA - 1


def statistic_families() -> Steps[list[Draft]]:
    members = yield from catalogue_steps(KIND)
    reads = [Op("hgetall", key) for key in meta_keys(KIND, members)]
    answers = (yield Pipe(reads, raise_on_error=False)) if reads else []
    drafts = []
    for name, series in metrics(members, [meta or None for meta in answers]):
        draft = Draft(
            name,
            KIND,
            "histogram",
            f"Statistic {name!r}: every value recorded since it was first written, in "
            f"log-scale buckets (histogram_quantile within {QUANTILE_ERROR:.2%}).",
        )
        for labels, meta in series.items:
            draft.samples += histogram_samples(renamed(labels, "le"), meta)
        drafts.append(draft)
    return drafts


def bounds(index: int) -> tuple[float, float]:
    """The lower and upper bound of the values of bucket ``index`` (``histogram.bucket``)."""
    if index == 0:
        return 0.0, 0.0
    k = abs(index) - OFFSET
    low, high = 2.0 ** ((k - 1) / PER_DOUBLING), 2.0 ** (k / PER_DOUBLING)
    return (low, high) if index > 0 else (-high, -low)


def histogram_samples(labels: dict[str, str], meta: Mapping[Any, Any]) -> list[Sample]:
    """``_bucket`` (cumulative, with ``le``), ``_count`` and ``_sum`` of one series, from its
    meta hash."""
    fields = {to_str(k): v for k, v in meta.items()}
    count = int(to_str(fields.get("n", b"0")))
    total = float(to_str(fields.get("s", b"0")))
    buckets = sorted(
        (int(field[1:]), int(value))
        for field, value in fields.items()
        if field[:1] == "b" and field != "bn"
    )
    samples: list[Sample] = []
    seen, last = 0, None
    for index, number in buckets:
        low, high = bounds(index)
        if index != 0 and low != last:
            samples.append(("_bucket", {**labels, "le": le(low)}, seen))
        seen += number
        samples.append(("_bucket", {**labels, "le": le(high)}, seen))
        last = high
    count = max(count, seen)
    samples.append(("_bucket", {**labels, "le": "+Inf"}, count))
    samples.append(("_count", labels, count))
    samples.append(("_sum", labels, total))
    return samples


def le(bound: float) -> str:
    """A bucket bound as Prometheus writes an ``le`` (Go's float formatting)."""
    return str(floatToGoString(bound))  # type: ignore[no-untyped-call]
