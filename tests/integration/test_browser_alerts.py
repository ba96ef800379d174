"""The Alerts page and the dashboard's banner in a real browser, on the demo and the alerts its
``metrics.py`` declares (the screenshot in docs/alerts.md comes from this run's
``test-artifacts/alerts.png``)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from django_redis_metrics import Counter, Statistic
from django_redis_metrics.alerts import evaluate

from .test_browser import PARIS, ROOT, chromium_page, demo_site, shot, sign_in

pytestmark = pytest.mark.browser


def demo_metrics() -> ModuleType:
    """The demo's ``metrics.py``, loaded from its file (``example_project/`` is not a package of
    the tests)."""
    spec = importlib.util.spec_from_file_location(
        "demo_metrics", ROOT / "example_project" / "demo" / "metrics.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_alerts_page_and_the_dashboard_banner(tmp_path: Path, settings: Any) -> None:
    metrics = demo_metrics()
    declared = [metrics.server_errors, metrics.slow_product, metrics.no_signups, metrics.backlog]
    with demo_site(tmp_path) as (base, redis_url), chromium_page() as page:
        settings.DJANGO_REDIS_METRICS = {"CONNECTION": redis_url, "PREFIX": "demo"}
        settings.TIME_ZONE = str(PARIS)
        now = time.time()
        hits = Counter("hits", labels=("view", "status"))
        hits.labels(view="buy", status="5xx").incr(18, when=now - 150)
        hits.labels(view="product", status="5xx").incr(9, when=now - 150)
        hits.labels(view="home", status="2xx").incr(400, when=now - 150)
        slow = Statistic("latency", labels=("view",)).labels(view="product")
        for value in [120] * 80 + [1400] * 20:
            slow.record(value, when=now - 150)
        metrics.signups.incr(when=now - 150)
        metrics.orders_pending.set(12, when=now - 150)
        for moment in (now - 140, now - 75, now - 10):  # three passes, a minute apart
            evaluate(moment, alerts=declared, webhooks=False)
        sign_in(page, base)
        page.goto(f"{base}/admin/django_redis_metrics/alertsmetric/")
        states = page.locator("#alerts tbody tr").evaluate_all(
            "rows => rows.map(r => [r.dataset.alert, r.dataset.state])"
        )
        assert states == [
            ["5xx spike", "firing"],
            ["slow product page", "pending"],
            ["no signups", "normal"],
            ["orders backlog", "normal"],
        ]
        assert (
            page.locator("#alerts tr[data-alert='5xx spike'] td[data-col=value]").inner_text()
            == "27"
        )
        shot(page, "alerts")
        page.goto(f"{base}/admin/django_redis_metrics/dashboardmetric/")
        banner = page.locator("#firing-alerts")
        assert "1 alert firing:" in banner.inner_text() and "5xx spike" in banner.inner_text()
        banner.get_by_role("link", name="5xx spike").click()
        page.wait_for_selector("#alerts")
