"""A real browser (Debian's headless Chromium, driven by Playwright) on the live admin chart."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from django_redis_metrics import Counter

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@contextmanager
def chromium_page() -> Iterator[Any]:
    """A page in headless Chromium. Playwright runs an event loop in this thread, so the test
    does its database work before opening the browser."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(20_000)
            yield page
        finally:
            browser.close()


def test_live_counter_chart(
    live_server: Any, single: Any, settings: Any, fresh_state: None
) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    User.objects.create_superuser("admin", password="metrics-demo")
    now = time.time()
    Counter("clicks").incr_many([(now - seconds, 1) for seconds in range(5, 65, 3)])  # 20 hits
    with chromium_page() as page:
        drive(page, live_server.url)


def drive(page: Any, base: str) -> None:
    live_server_url = base

    page.goto(f"{live_server_url}/admin/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "metrics-demo")
    page.click("input[type=submit]")
    page.get_by_role("link", name="Counters").click()
    page.get_by_role("link", name="clicks", exact=True).click()
    page.get_by_role("link", name="1 s", exact=True).click()

    chart = page.locator("figure#counter-chart")
    page.wait_for_selector("figure#counter-chart[data-state]")
    assert chart.get_attribute("data-points") == "120"
    assert page.locator("figure#counter-chart circle").count() == 120
    assert int(chart.get_attribute("data-total")) == 20
    assert page.locator("figure#counter-chart circle[r='2.5']").count() == 20  # non-zero points

    # New hits, counted by a decorated view of the live server (its handler is built once per
    # session, before any test's MIDDLEWARE, so the decorator counts); the chart updates itself.
    for _ in range(7):
        assert page.request.get(f"{live_server_url}/click/").ok
    page.wait_for_function(
        "Number(document.querySelector('figure#counter-chart').dataset.total) >= 27"
        " && document.querySelector('figure#counter-chart').dataset.state === 'live'",
        timeout=20_000,
    )
    assert page.locator("figure#counter-chart circle").count() == 120
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "counter-chart.png"), full_page=True)
    assert (ARTIFACTS / "counter-chart.png").stat().st_size > 10_000
