"""A real browser sees annotations on a chart: a marker per annotation of the range, its text
on hover, as text (a script in it never runs). Chromium on the demo site, as
``tests/integration/test_browser.py`` drives it; skipped without Chromium. The screenshot it
leaves in ``test-artifacts/annotations.png`` is the one ``docs/annotations.md`` shows."""

from __future__ import annotations

import time
from typing import Any

import pytest

from django_redis_metrics import Counter, annotate

from ..integration.test_browser import chromium_page, demo, demo_site, shot, sign_in

__all__ = ["chromium_page", "demo", "demo_site", "sign_in"]

pytestmark = pytest.mark.browser
CHART = "document.querySelector('figure#counter-chart')"
HOSTILE = '<img src=x onerror="window.pwned=1">Rollback'


def test_an_annotation_marker_on_a_chart_shows_its_text_on_hover(demo: Any) -> None:
    base, page = demo
    now = time.time()
    traffic = Counter("hits:home")
    for minute in range(100):
        traffic.incr(
            40 + (minute * 7) % 23 + (25 if 30 <= minute < 45 else 0), when=now - 6000 + 60 * minute
        )
    annotate("Deploy v1.4", when=now - 4200, tags=["deploy"])
    annotate("Cache flushed after the 5xx spike", when=now - 2400, tags=["incident", "web"])
    annotate(HOSTILE, when=now - 900, tags=["deploy"])
    annotate("Long ago", when=now - 86400 * 3)  # outside the chart's range: not drawn
    page.goto(f"{base}/admin/django_redis_metrics/countermetric/chart/?name=hits:home&precision=60")
    page.wait_for_function(f"{CHART} && {CHART}.dataset.annotations === '3'")
    markers = page.locator("figure#counter-chart .drm-annotation")
    assert markers.count() == 3
    assert "3 annotations" in page.locator("figure#counter-chart figcaption").inner_text()
    # Each marker stands at the start of the minute holding its annotation.
    xs = [float(x) for x in markers.evaluate_all("ms => ms.map(m => m.dataset.x)")]
    assert xs == [(t // 60) * 60 for t in (now - 4200, now - 2400, now - 900)]
    markers.nth(1).hover()
    tip = page.locator("figure#counter-chart .drm-annotation-tip")
    tip.wait_for(state="visible")
    assert "Cache flushed after the 5xx spike" in tip.inner_text()
    assert "incident, web" in tip.inner_text()
    shot(page, "annotations")
    markers.nth(2).hover()
    assert HOSTILE in tip.inner_text()  # shown as text, never as markup
    assert page.locator("figure#counter-chart img").count() == 0
    assert page.evaluate("window.pwned") is None
