"""The batched bitmap cleaner: many bitmaps per round trip, each dropping exactly the periods
past their retention, a bitmap with more to drop than one call finished, empty ones retired."""

from __future__ import annotations

import time
from typing import Any

import pytest

from django_redis_metrics import UniqueBitmap
from django_redis_metrics.bitmaps import cleaner as bitmap_cleaner
from django_redis_metrics.bitmaps.cleaner import clean_bitmaps, retention_cutoff
from django_redis_metrics.bitmaps.keys import KIND
from django_redis_metrics.conf import conf
from django_redis_metrics.core.keys import metric_key
from django_redis_metrics.core.periods import PERIOD_NAMES

HOUR = 3600


def indexed(backend: Any, bitmap: UniqueBitmap) -> dict[str, dict[str, float]]:
    return {
        period: {
            member.decode(): score
            for member, score in backend.client.zrange(
                bitmap.index_key(period), 0, -1, withscores=True
            )
        }
        for period in PERIOD_NAMES
    }


@pytest.mark.parametrize("budget", [200, 3])
def test_a_pass_over_many_pages_drops_exactly_the_old_periods(
    backend: Any, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    monkeypatch.setattr(bitmap_cleaner, "PERIOD_BUDGET", budget)
    now = time.time()
    bitmaps = [UniqueBitmap(f"b{index:02}", periods=PERIOD_NAMES) for index in range(17)]
    for index, bitmap in enumerate(bitmaps):
        for user in range(index % 4 * 4 + 1):
            bitmap.mark(user, when=now - user * 3 * HOUR)
    before = {bitmap.name: indexed(backend, bitmap) for bitmap in bitmaps}
    later = now + 30 * HOUR  # the hours marked more than 18 hours ago fall out
    retention = conf.BITMAP_RETENTION
    cutoffs = {p: retention_cutoff(p, retention[p], later) for p in PERIOD_NAMES}
    report = clean_bitmaps(now=later, batch_size=5)
    dropped = 0
    for bitmap in bitmaps:
        expected = {
            period: {m: s for m, s in members.items() if s >= cutoffs[period]}
            for period, members in before[bitmap.name].items()
        }
        dropped += sum(len(before[bitmap.name][p]) - len(expected[p]) for p in PERIOD_NAMES)
        assert indexed(backend, bitmap) == expected
        for member in set(before[bitmap.name]["hour"]) - set(expected["hour"]):
            assert not backend.client.exists(metric_key(KIND, bitmap.name, "hour", member))
    assert report.items_removed == dropped > len(bitmaps)
    assert report.metrics_checked == len(bitmaps)
    assert report.metrics_removed == []

    much_later = now + 6 * 366 * 86400  # every period falls out (months: 60): all retired
    report = clean_bitmaps(now=much_later, batch_size=5)
    assert sorted(report.metrics_removed) == sorted(b.name for b in bitmaps)
    assert UniqueBitmap.objects.names() == []
    assert not [key for key in backend.keys() if ":gen" not in key and ":bitmapid:" not in key]
