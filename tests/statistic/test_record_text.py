"""Statistic.record writes a slice's text exactly as a plain Python model of the text does, value
by value: the same header (Welford's sum and m2 at 17 digits, min and max as the caller's exact
repr), the same cells in the same order, the two lowest buckets merged past ``MAX_BUCKETS``, and
the same when the slice was written before by a raw HSET of the text the previous version
wrote. So the script's faster splicing changes no byte that a reader, the archive or an older
process reads."""

from __future__ import annotations

import random
from typing import Any, ClassVar

from django_redis_metrics import Statistic, get_redis_connection
from django_redis_metrics.statistic import histogram

WHEN = 1_000_000_000 + 90


def added(text: str | None, value: float, max_buckets: int) -> str:
    """``text`` (None: a new slice) with ``value`` added, as the record script splices it."""
    shown, tag = repr(value), str(histogram.bucket(value))
    if text is None:
        return f"1,{shown},0,{shown},{shown},1;{tag}:1"
    count, total, m2, low, high, rest = text.split(",", 5)
    kept, *cells_text = rest.split(";")
    cells = [cell.split(":") for cell in cells_text]
    n, s, squares = int(count), float(total), float(m2)
    mean = s / n
    n += 1
    s += value
    squares += (value - mean) * (value - s / n)
    low = shown if value < float(low) else low
    high = shown if value > float(high) else high
    found = [cell for cell in cells if cell[0] == tag]
    if found:
        found[0][1] = str(int(found[0][1]) + 1)
    else:
        cells.append([tag, "1"])
        kept = str(int(kept) + 1)
        if int(kept) > max_buckets:
            lowest, second = sorted(cells, key=lambda cell: int(cell[0]))[:2]
            cells.remove(lowest)
            second[1] = str(int(second[1]) + int(lowest[1]))
            kept = str(int(kept) - 1)
    body = "".join(f";{b}:{c}" for b, c in cells)
    return f"{n},{s:.17g},{squares:.17g},{low},{high},{kept}{body}"


def texts(statistic: Statistic) -> dict[int, str]:
    client = get_redis_connection()
    found = {}
    for precision in statistic.precisions:
        text = client.hget(statistic.key(precision), str(WHEN // precision * precision))
        found[precision] = text.decode()
    return found


class Narrow(Statistic):
    """Slices of 6 buckets: most records below merge the two lowest."""

    MAX_BUCKETS: ClassVar[int] = 6


def values(seed: int, n: int) -> list[float]:
    rng = random.Random(seed)
    return [
        rng.choice([10 ** rng.uniform(-3, 6), -rng.uniform(0, 50), 0.0, 7.0, 0.1, 2.0**53])
        for _ in range(n)
    ]


def test_each_record_leaves_the_models_text(backend: Any) -> None:
    for statistic in (Statistic("wide", precisions=[60, 3600]), Narrow("narrow")):
        model: str | None = None
        for i, value in enumerate(values(5, 300)):
            statistic.record(value, when=WHEN)
            model = added(model, value, statistic.MAX_BUCKETS)
            if i % 37 == 0 or i == 299:
                assert texts(statistic) == dict.fromkeys(statistic.precisions, model), i


def test_a_slice_the_previous_version_wrote_goes_on_exactly(backend: Any) -> None:
    statistic = Narrow("upgraded", precisions=[60])
    start = str(WHEN // 60 * 60)
    cells = ";".join(f"{histogram.bucket(v)}:{n}" for v, n in ((0.5, 2), (3.0, 1), (900.0, 4)))
    old = f"7,2706.5,3456789.25,0.5,900.0,3;{cells}"  # as the previous version stored it
    client = get_redis_connection()
    client.hset(statistic.key(60), start, old)
    client.hset(statistic.meta_key, mapping={"60": statistic.samples, "h:60": start})
    model = old
    for value in [3.0, 0.25, 1e4, 900.0, 42.0, 0.01, 5e5, 3.0]:
        statistic.record(value, when=WHEN)
        model = added(model, value, Narrow.MAX_BUCKETS)
        assert texts(statistic) == {60: model}
    assert model.startswith("15,") and model.count(";") == Narrow.MAX_BUCKETS
