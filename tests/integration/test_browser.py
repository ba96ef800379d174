"""A real browser (Debian's headless Chromium, driven by Playwright) on the demo's live chart.

The demo itself runs (``manage.py demo``, its settings, URLs and admin account ``admin`` /
``metrics-demo``) on a private Redis, without generated traffic or simulated visitors, so the
only hits on the home page are the test's own: the chart's totals are exact, whatever the time
the machine takes to start things. No sleeps: every wait is for a condition, with generous
timeouts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from django_redis_metrics.testing import RedisServer, free_port

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
MANAGE = ROOT / "example_project" / "manage.py"
ARTIFACTS = ROOT / "test-artifacts"
#: Generous: a loaded CI machine may be slow to start the demo or Chromium.
TIMEOUT = 60

pytestmark = pytest.mark.browser


@contextmanager
def demo_site(tmp_path: Path) -> Iterator[str]:
    """``manage.py demo`` serving on a free port, on its own private Redis; its base URL."""
    server = RedisServer().start()
    port = free_port()
    env = {**os.environ, "REDIS_URL": server.url, "DEMO_DATABASE": str(tmp_path / "demo.db")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    process = subprocess.Popen(
        [sys.executable, str(MANAGE), "demo", f"127.0.0.1:{port}", "--no-visitors", "--no-traffic"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 2 * TIMEOUT
        while True:
            try:
                with urllib.request.urlopen(f"{base}/health/", timeout=5):
                    break
            except OSError:
                assert process.poll() is None, "the demo exited"
                assert time.monotonic() < deadline, "the demo did not start"
                time.sleep(0.1)
        yield base
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        server.cleanup()


@contextmanager
def chromium_page() -> Iterator[Any]:
    """A page in headless Chromium."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.set_default_timeout(TIMEOUT * 1000)
            yield page
        finally:
            browser.close()


def visit_home(page: Any, base: str, times: int) -> None:
    """Hits on the demo's home page, counted by its middleware as ``hits:home``."""
    for _ in range(times):
        assert page.request.get(f"{base}/").ok


def chart_total_is(page: Any, condition: str) -> None:
    chart = "document.querySelector('figure#counter-chart')"
    page.wait_for_function(
        f"{chart} && {chart}.dataset.state === 'live' && Number({chart}.dataset.total) {condition}"
    )


def test_live_counter_chart_in_the_demo_admin(tmp_path: Path) -> None:
    with demo_site(tmp_path) as base, chromium_page() as page:
        page.goto(f"{base}/admin/")
        page.fill("#id_username", "admin")  # the demo admin account the README names
        page.fill("#id_password", "metrics-demo")
        page.click("input[type=submit]")
        # Seeded just before the chart opens: these hits sit in its newest seconds.
        visit_home(page, base, 20)
        page.get_by_role("link", name="Counters").click()
        page.get_by_role("link", name="hits:home", exact=True).click()
        page.get_by_role("link", name="1 s", exact=True).click()

        chart = page.locator("figure#counter-chart")
        chart_total_is(page, "=== 20")  # the middleware's writes may land just after the page
        assert chart.get_attribute("data-points") == "120"
        assert page.locator("figure#counter-chart circle").count() == 120
        assert page.locator("figure#counter-chart circle[r='2.5']").count() >= 1  # non-zero

        # New hits through the demo's own middleware; the chart updates itself.
        visit_home(page, base, 7)
        chart_total_is(page, "=== 27")
        assert page.locator("figure#counter-chart circle").count() == 120
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "counter-chart.png"), full_page=True)
        assert (ARTIFACTS / "counter-chart.png").stat().st_size > 10_000
