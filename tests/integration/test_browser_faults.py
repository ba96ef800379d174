"""A live chart in a real browser through a Redis restart and an expired session (the demo,
headless Chromium: see ``test_browser.py``)."""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
import redis

from django_redis_metrics.testing import RedisServer

from .test_browser import CHART, chromium_page, demo_site, shot, sign_in, visit, wait_for_chart

pytestmark = pytest.mark.browser

STATUS = "figure#counter-chart [data-drm-status]"


def test_a_live_chart_survives_a_redis_restart_and_says_when_the_session_expired(
    tmp_path: Path,
) -> None:
    with demo_site(tmp_path) as (base, redis_url), chromium_page() as page:
        sign_in(page, base)
        visit(page, f"{base}/", 3)
        page.goto(f"{base}/admin/django_redis_metrics/countermetric/chart/?name=hits&precision=1")
        wait_for_chart(page, "true")
        chart_url = page.url

        port = redis.Redis.from_url(redis_url).connection_pool.connection_kwargs["port"]
        with suppress(redis.ConnectionError):  # the server goes before it answers
            redis.Redis.from_url(redis_url).shutdown(nosave=True)
        page.wait_for_function(f"{CHART}.dataset.state === 'unreachable'")
        assert page.locator(STATUS).inner_text() == "Redis unreachable, retrying"
        assert page.locator("figure#counter-chart .uplot canvas").count() == 1  # still drawn
        shot(page, "chart-redis-unreachable")

        restarted = RedisServer(port=port).start()  # an empty Redis on the same address
        try:
            visit(page, f"{base}/", 2)  # hits again: the demo's writes reach the new server
            fetches = int(page.locator("figure#counter-chart").get_attribute("data-fetches"))
            wait_for_chart(page, f"Number({CHART}.dataset.fetches) > {fetches}")  # by itself
            assert page.locator(STATUS).inner_text().startswith("live, updated")

            page.context.clear_cookies()  # the session ends (expired, or logged out elsewhere)
            page.wait_for_function(f"{CHART}.dataset.state === 'expired'")
            assert page.locator(STATUS).inner_text() == "session expired: log in again"
            link = page.locator("figure#counter-chart [data-drm-status] a")
            href = link.get_attribute("href")
            assert href.startswith(f"{base}/admin/login/?next=")
            shot(page, "chart-session-expired")
            link.click()
            sign_in_form(page)
            page.wait_for_url(chart_url)
            wait_for_chart(page, "true")
        finally:
            restarted.cleanup()


def sign_in_form(page: Any) -> None:
    """Fill the login form the expired chart's link led to (the demo's admin account)."""
    page.fill("#id_username", "admin")
    page.fill("#id_password", "metrics-demo")
    page.click("input[type=submit]")
