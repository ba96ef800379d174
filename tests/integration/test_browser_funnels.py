"""The demo's checkout funnel in Chromium: its page draws the conversion table and the per-day
chart from the generated history; the screenshot in docs/funnels.md comes from this run's
``test-artifacts/funnel.png``."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_browser import chromium_page, demo_site, shot, sign_in

pytestmark = pytest.mark.browser

FIGURE = "document.querySelector('figure#funnel-over-time')"


def test_the_checkout_funnel_page(tmp_path: Path) -> None:
    with demo_site(tmp_path, traffic=True) as (base, _), chromium_page() as page:
        sign_in(page, base)
        page.get_by_role("link", name="Funnels", exact=True).click()
        page.locator("#funnels a", has_text="checkout").click()
        page.wait_for_function(f"{FIGURE} && {FIGURE}.dataset.state")
        users = page.locator("#funnel tbody td:nth-child(2)").all_inner_texts()
        assert len(users) == 2 and int(users[0]) > 0  # today's active users
        assert int(users[1]) <= int(users[0])  # the buyers among them
        series = page.evaluate(f"{FIGURE}._payload.series")
        assert series[0]["label"] == "buyers (% of active_users)"
        assert any(v for v in series[0]["values"]), "a day of the history converted"
        shot(page, "funnel")
