"""A real browser (Debian's headless Chromium, driven by Playwright) on the demo's admin.

The demo itself runs (``manage.py demo``, its settings, URLs and admin account ``admin`` /
``metrics-demo``; the site in Europe/Paris) on a private Redis, without generated traffic or
simulated visitors, so the only data are the test's own: the charts' totals are exact, whatever
the time the machine takes to start things. The browser runs in UTC, another zone than the
site's, so a label made in the browser's zone would show. The test process writes data of its
own straight into the demo's Redis (same URL and prefix) where a page needs it. Waits are for
conditions, with generous timeouts; the one fixed wait checks that nothing happens while the
tab is hidden. Screenshots of every page go to ``test-artifacts/``.
"""

from __future__ import annotations

import csv
import io
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote
from zoneinfo import ZoneInfo

import pytest

from django_redis_metrics import Counter, EventSeries, Statistic, UniqueBitmap
from django_redis_metrics.core.periods import Day
from django_redis_metrics.testing import RedisServer, free_port

from ..browser import CHROMIUM

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
PARIS = ZoneInfo("Europe/Paris")
#: Generous: a loaded CI machine may be slow to start the demo or Chromium.
TIMEOUT = 60
CHART = "document.querySelector('figure#counter-chart')"

pytestmark = pytest.mark.browser


@contextmanager
def demo_site(tmp_path: Path, traffic: bool = False) -> Iterator[tuple[str, str]]:
    """``manage.py demo`` serving on a free port, on its own private Redis: (base URL, Redis
    URL). Without ``traffic``: no generated history and no simulated visitors."""
    server = RedisServer().start()
    port = free_port()
    env = {**os.environ, "REDIS_URL": server.url, "DEMO_DATABASE": str(tmp_path / "demo.db")}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    quiet = [] if traffic else ["--no-visitors", "--no-traffic"]
    process = subprocess.Popen(
        [sys.executable, str(MANAGE), "demo", f"127.0.0.1:{port}", *quiet],
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
        yield base, server.url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        server.cleanup()


@contextmanager
def chromium_page(color_scheme: str = "light") -> Iterator[Any]:
    """A page in headless Chromium, in UTC (the demo site is in Europe/Paris)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(
                viewport={"width": 1280, "height": 900},
                timezone_id="UTC",
                color_scheme=color_scheme,
            )
            page = context.new_page()
            page.set_default_timeout(TIMEOUT * 1000)
            yield page
        finally:
            browser.close()


@pytest.fixture
def demo(tmp_path: Path, settings: Any) -> Iterator[tuple[str, Any]]:
    """The demo, and this process's settings pointed at its Redis (to write and read data)."""
    with demo_site(tmp_path) as (base, redis_url):
        # The site's zone on this side too: a day, week or month counted here is the site's,
        # whatever the hour in UTC (the tests' own TIME_ZONE).
        settings.DJANGO_REDIS_METRICS = {
            "CONNECTION": redis_url,
            "PREFIX": "demo",
            "TIME_ZONE": str(PARIS),
        }
        with chromium_page() as page:
            assert page.evaluate("Intl.DateTimeFormat().resolvedOptions().timeZone") == "UTC"
            sign_in(page, base)
            yield base, page


def sign_in(page: Any, base: str) -> None:
    page.goto(f"{base}/admin/")
    page.fill("#id_username", "admin")  # the demo admin account the README names
    page.fill("#id_password", "metrics-demo")
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")


def visit(page: Any, url: str, times: int) -> None:
    """Requests counted by the demo's middleware (in the ``hits`` counter's series of the
    page's view)."""
    for _ in range(times):
        assert page.request.get(url).ok


def seed(times: int) -> None:
    """Hits of the plain counter ``hits:home`` (a counter of the site's own, written as the
    middleware wrote before labels), each written at once."""
    for _ in range(times):
        Counter("hits:home").incr()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
    assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000


def wait_for_chart(page: Any, condition: str) -> None:
    page.wait_for_function(f"{CHART} && {CHART}.dataset.state === 'live' && ({condition})")


def hover_point(page: Any, index: int) -> None:
    """The mouse over point ``index`` of the counter chart (pixel from uPlot's own scale)."""
    box = page.locator("figure#counter-chart .u-over").bounding_box()
    left = page.evaluate(
        f"(() => {{ const u = {CHART}._plot; return u.valToPos(u.data[0][{index}], 'x'); }})()"
    )
    page.mouse.move(box["x"] + min(left, box["width"] - 1), box["y"] + box["height"] / 2)


def legend(page: Any) -> list[str]:
    return page.locator("figure#counter-chart .u-legend .u-value").all_inner_texts()


def payload(page: Any) -> Any:
    return page.evaluate(f"{CHART}._payload")


def test_live_counter_chart_in_the_site_zone_with_cursor_zoom_and_pause(demo: Any) -> None:
    _base, page = demo
    seed(20)  # just before the chart opens: in its newest seconds
    page.get_by_role("link", name="Counters").click()
    page.get_by_role("link", name="hits:home", exact=True).click()
    page.get_by_role("link", name="1 s", exact=True).click()
    wait_for_chart(page, f"Number({CHART}.dataset.total) === 20")  # writes may land just after
    assert page.locator("figure#counter-chart .uplot canvas").count() == 1  # drawn by uPlot
    assert page.evaluate("typeof uPlot") == "function"
    chart = page.locator("figure#counter-chart")
    assert chart.get_attribute("data-points") == "120"
    assert chart.get_attribute("data-tz") == "Europe/Paris"
    offset = datetime.now(PARIS).strftime("%z")
    zone = f"Europe/Paris (UTC{offset[:3]}:{offset[3:]})"
    assert zone in chart.locator("figcaption").inner_text()
    assert "hits:home per second" in chart.locator("figcaption").inner_text()
    # The ticks uPlot computed: times on the x axis in the site's zone, whole counts on y.
    x_splits, x_values, y_splits = page.evaluate(
        f"(() => {{ const a = {CHART}._plot.axes; "
        "return [a[0]._splits, a[0]._values, a[1]._splits]; })()"
    )
    assert len(x_splits) >= 4
    assert [v.split("\n")[0] for v in x_values] == [
        datetime.fromtimestamp(split, PARIS).strftime("%H:%M:%S") for split in x_splits
    ]
    assert all(split % 5 == 0 for split in x_splits)  # round times: every 5, 10, 15 s...
    assert all(float(split).is_integer() for split in y_splits)

    # Hover values: the site-zone label of the slice and its count, in a UTC browser.
    data = payload(page)
    values = data["series"][0]["values"]
    index = max(i for i, v in enumerate(values[:-1]) if v) if any(values[:-1]) else 118
    hover_point(page, index)
    expected_label = datetime.fromtimestamp(data["x"][index], PARIS).strftime("%Y-%m-%d %H:%M:%S")
    assert legend(page) == [expected_label, str(values[index])]
    assert chart.get_attribute("data-cursor-idx") == str(index)
    # The open slice is marked as partial.
    assert chart.get_attribute("data-partial") == "true"
    hover_point(page, 119)
    assert legend(page)[0].endswith("(so far)")
    shot(page, "counter-chart")

    # New hits: the chart refreshes, the cursor stays on it.
    hover_point(page, 100)
    fetches = int(chart.get_attribute("data-fetches") or 0)
    seed(7)
    wait_for_chart(page, f"Number({CHART}.dataset.total) === 27")
    page.wait_for_function(f"Number({CHART}.dataset.fetches) > {fetches}")
    assert chart.get_attribute("data-cursor-idx") == "100"
    assert legend(page)[0] != ""  # still showing the slice under the cursor

    # Drag to zoom; a refresh keeps the zoom.
    box = page.locator("figure#counter-chart .u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.25, box["y"] + 20)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.75, box["y"] + 20, steps=5)
    page.mouse.up()
    assert chart.get_attribute("data-zoomed") == "true"
    span = page.evaluate(f"{CHART}._plot.scales.x.max - {CHART}._plot.scales.x.min")
    assert 40 < span < 80  # half of the 120 s shown
    fetches = int(chart.get_attribute("data-fetches") or 0)
    page.wait_for_function(f"Number({CHART}.dataset.fetches) > {fetches} + 1")
    assert chart.get_attribute("data-zoomed") == "true"
    assert page.evaluate(f"{CHART}._plot.scales.x.max - {CHART}._plot.scales.x.min") == span
    shot(page, "counter-chart-zoomed")

    # Hidden tab: no request at all until it is visible again (Page Visibility API).
    data_requests: list[str] = []
    page.on("request", lambda r: data_requests.append(r.url) if "/data/" in r.url else None)
    page.evaluate(
        """() => {
        const hidden = (value) => ({configurable: true, get: () => value});
        Object.defineProperty(document, "hidden", hidden(true));
        Object.defineProperty(document, "visibilityState", hidden("hidden"));
        document.dispatchEvent(new Event("visibilitychange"));
    }"""
    )
    page.wait_for_function(f"{CHART}.dataset.state === 'paused'")
    seen = len(data_requests)
    page.wait_for_timeout(3 * 2000)  # three refresh periods of a 1 s chart
    assert len(data_requests) == seen
    assert "paused" in chart.locator("[data-drm-status]").inner_text()
    page.evaluate(
        """() => {
        delete document.hidden; delete document.visibilityState;
        document.dispatchEvent(new Event("visibilitychange"));
    }"""
    )
    wait_for_chart(page, "true")
    assert len(data_requests) > seen


def test_overlay_csv_export_and_dark_mode(demo: Any) -> None:
    base, page = demo
    now = time.time()
    hits = Counter("hits:home")
    hits.incr(5, when=now - 86400)
    hits.incr(3, when=now)
    # The range ends at now's hour, pinned: an hour turning mid-test moves nothing.
    end = quote(datetime.fromtimestamp(now, UTC).isoformat(timespec="seconds"))
    page.goto(
        f"{base}/admin/django_redis_metrics/countermetric/chart/?name=hits:home&precision=3600"
        f"&end={end}"
    )
    page.get_by_role("link", name="the day before").click()
    wait_for_chart(page, f"Number({CHART}.dataset.total) === 8")  # 120 hours: both days
    chart = page.locator("figure#counter-chart")
    assert chart.get_attribute("data-series") == "2"
    hover_point(page, 119)
    assert legend(page)[1:] == ["3", "5"]  # this hour, and the same hour the day before
    hover_point(page, 95)
    assert legend(page)[1] == "5"  # the day before, on the main line
    assert page.locator(".u-legend .u-series").nth(2).inner_text().startswith("the day before")
    shot(page, "counter-compare")

    with page.expect_download() as download:
        page.locator("a.drm-export-csv").click()
    text = Path(download.value.path()).read_text()
    header, *rows = list(csv.reader(io.StringIO(text)))
    assert header == ["start", "label", "the day before", "value"]
    shown = {datetime.fromisoformat(row[0]).timestamp(): int(row[-1]) for row in rows}
    stored = dict(hits.series(3600))
    assert {start: count for start, count in shown.items() if count} == {
        start: count for start, count in stored.items() if start in shown and count
    }
    assert sum(shown.values()) == 8
    assert all(datetime.fromisoformat(row[0]).utcoffset() is not None for row in rows)

    # Dark mode: the line takes the admin's dark --link-fg, read from the canvas itself.
    def line_colour() -> list[int]:
        return list(
            page.evaluate(
                f"""() => {{
                const u = {CHART}._plot, r = devicePixelRatio, xs = u.data[0];
                const x = (u.valToPos(xs[10], 'x', true) + u.valToPos(xs[11], 'x', true)) / 2;
                const y = u.valToPos(0, 'y', true) - 1 * r;
                return Array.from(u.ctx.getImageData(Math.round(x), Math.round(y), 1, 1).data);
            }}"""
            )
        )

    def css_colour() -> list[int]:
        hexa = page.evaluate(
            "getComputedStyle(document.documentElement).getPropertyValue('--link-fg').trim()"
        )
        return [int(hexa[i : i + 2], 16) for i in (1, 3, 5)]

    def distance_settles(expected: list[int]) -> int:
        """How far the drawn line's colour is from ``expected``, once a redraw (asynchronous
        after a colour-scheme change) has had up to 2 s to land."""
        distance = 255
        for _ in range(20):
            distance = max(abs(a - b) for a, b in zip(line_colour()[:3], expected, strict=True))
            if distance < 40:
                break
            page.wait_for_timeout(100)
        return distance

    light = css_colour()
    assert distance_settles(light) < 40
    before = page.evaluate("window.djangoRedisMetricsCharts.colour('line')")
    page.emulate_media(color_scheme="dark")
    page.wait_for_function(f"window.djangoRedisMetricsCharts.colour('line') !== '{before}'")
    dark = css_colour()
    assert dark != light
    assert distance_settles(dark) < 40
    shot(page, "counter-compare-dark")


def test_dashboard_numbers_equal_the_models(demo: Any) -> None:
    base, page = demo
    now = time.time()
    visit(page, f"{base}/", 12)  # the admin is signed in: marked active by the middleware
    visit(page, f"{base}/products/mug/", 5)
    orders = EventSeries("orders", index=["product", "country"])
    for _ in range(4):
        orders.record(when=now - 30, view="buy", product="mug", country="FR")
    UniqueBitmap("active_users").mark(99, when=now)
    midnight = Day.containing(now, PARIS).start_ts
    deadline = time.monotonic() + TIMEOUT
    while sum(c for s, c in Counter("hits").series(3600) if s >= midnight) < 17:
        assert time.monotonic() < deadline, "the demo's writes did not arrive"
        time.sleep(0.1)
    page.goto(f"{base}/admin/")
    page.get_by_role("link", name="Dashboard", exact=True).click()
    assert page.locator("h1").inner_text() == "Dashboard"

    def number(selector: str) -> int:
        return int(page.locator(selector).first.get_attribute("data-value"))

    today = sum(c for s, c in Counter("hits").series(3600) if s >= midnight)
    assert number("#hits-today") == today == 17
    active = UniqueBitmap("active_users")
    for kind in ("day", "week", "month"):
        assert number(f"#active-{kind}") == active.count(kind) == 2
    views = {
        row.locator("td").first.inner_text(): int(row.locator("a").get_attribute("data-value"))
        for row in page.locator("#top-views tbody tr").all()
    }
    assert views == {"home": 12, "product": 5}
    row = page.locator("#busiest-events tbody tr").first
    assert row.locator("td").first.inner_text() == "orders"
    assert int(row.locator("a").first.get_attribute("data-value")) == orders.count(now - 3600, now)
    page.wait_for_function(
        "document.querySelector('figure#hits-chart') && "
        "document.querySelector('figure#hits-chart').dataset.state"
    )
    shot(page, "dashboard")
    page.locator("#hits-today").click()  # every number links to its chart
    page.wait_for_function(f"{CHART} && {CHART}.dataset.state")
    assert int(page.locator("figure#counter-chart").get_attribute("data-total")) == today


def test_event_and_bitmap_pages_and_a_staff_page_with_the_template_tag(demo: Any) -> None:
    base, page = demo
    now = time.time()
    orders = EventSeries("orders", index=["product", "country"])
    orders.record(when=now - 5, view="buy", product="mug", country="FR")
    orders.record(when=now - 86400 - 5, view="buy", product="mug", country="DE")
    UniqueBitmap("active_users").mark(5, when=now)
    Counter("signups").incr(2, when=now)
    page.goto(
        f"{base}/admin/django_redis_metrics/eventseriesmetric/detail/?name=orders&window=3600&compare=day"
    )
    page.wait_for_function("document.querySelector('figure#series-chart').dataset.state")
    assert page.locator("figure#series-chart").get_attribute("data-series") == "2"
    shot(page, "event-series")
    page.goto(f"{base}/admin/django_redis_metrics/uniquebitmapmetric/detail/?name=active_users")
    page.wait_for_function("document.querySelector('figure#uniques-week').dataset.state")
    week = page.evaluate("document.querySelector('figure#uniques-week')._payload")
    today = datetime.fromtimestamp(now, PARIS)
    assert week["labels"][-1] == "{}-W{:02d}".format(*today.isocalendar()[:2])
    shot(page, "unique-users")
    page.goto(f"{base}/staff/")
    page.wait_for_function(
        "document.querySelectorAll('figure[data-drm-chart] .uplot').length === 3"
    )
    assert page.locator("script[src$='uPlot.iife.min.js']").count() == 1
    shot(page, "staff-page")


def test_views_page_and_a_statistic_chart_with_its_band(demo: Any) -> None:
    base, page = demo
    now = time.time()
    minute = int(now // 60) * 60
    latency = Statistic("latency:checkout")
    for ago, values in ((2, (100, 300, 500)), (1, (40, 60)), (0, (10, 20, 30))):
        for value in values:
            latency.record(value, when=minute - ago * 60 + 1)
    Counter("status:checkout:2xx").incr(8, when=now)
    page.goto(f"{base}/admin/")
    page.get_by_role("link", name="Views", exact=True).click()
    row = page.locator("#views tr[data-view='checkout']")
    assert row.locator("td[data-col='requests']").first.inner_text() == "8"
    assert row.locator("td[data-col='max']").first.inner_text() == "500.0"
    shot(page, "views")
    row.get_by_role("link", name="checkout").click()  # its latency chart
    figure = "document.querySelector('figure#statistic-chart')"
    page.wait_for_function(f"{figure} && {figure}.dataset.state")
    assert page.locator("figure#statistic-chart").get_attribute("data-band") == "true"
    assert page.locator("figure#statistic-chart .uplot canvas").count() == 1
    labels = page.locator("figure#statistic-chart .u-legend .u-label").all_inner_texts()
    assert labels[1:] == ["mean", "p50 (band's low edge)", "p95 (band's high edge)"]
    shown = page.evaluate(f"{figure}._payload")
    means = [v for v in shown["series"][0]["values"] if v is not None]
    assert means[-3:] == [300, 50, 20]
    # The cursor on the minute of 300 ms, found by its time and read back in one step of the
    # page's script: a live refresh at a minute's turn adds a point, so an index or a pixel
    # found one step earlier may be the next minute's by the time the legend is read.
    values = page.evaluate(
        f"""(() => {{
            const u = {figure}._plot, index = u.data[0].indexOf({minute - 120});
            u.setCursor({{left: u.valToPos(u.data[0][index], 'x'), top: u.bbox.height / 4}});
            return [...{figure}.querySelectorAll('.u-legend .u-value')].map(e => e.textContent);
        }})()"""
    )
    assert values[1] == "300 ms"
    shot(page, "statistic-chart")


def test_screenshots_of_the_demo_with_its_traffic(tmp_path: Path) -> None:
    """The demo as a new site owner sees it (generated history, visitors browsing): the
    README's screenshots come from this run's ``test-artifacts/``."""
    with demo_site(tmp_path, traffic=True) as (base, _), chromium_page() as page:
        sign_in(page, base)
        page.get_by_role("link", name="Dashboard", exact=True).click()
        page.wait_for_function("document.querySelector('figure#hits-chart').dataset.state")
        assert int(page.locator("#hits-today").get_attribute("data-value")) > 0
        shot(page, "readme-dashboard")
        page.goto(f"{base}/admin/django_redis_metrics/countermetric/chart/?name=hits&precision=300")
        wait_for_chart(page, f"Number({CHART}.dataset.total) > 100")
        hover_point(page, 100)
        shot(page, "readme-counter")
        page.goto(f"{base}/admin/django_redis_metrics/viewsmetric/")
        views = page.locator("#views tbody tr").evaluate_all(
            "rows => rows.map(r => r.dataset.view)"
        )
        assert {"home", "product", "buy"} <= set(views)  # the generated history's views
        shot(page, "readme-views")
        page.locator("#views tr[data-view='product'] th a").first.click()
        figure = "document.querySelector('figure#statistic-chart')"
        page.wait_for_function(f"{figure} && {figure}.dataset.state")
        assert page.locator("figure#statistic-chart").get_attribute("data-band") == "true"
        shot(page, "readme-latency")


def test_a_labelled_counters_breakdown_lines_and_table(demo: Any) -> None:
    base, page = demo
    now = time.time()
    orders = Counter("orders", labels=("country",), precisions=[60, 3600])
    for country, count in (("FR", 5), ("DE", 3), ("<b>XX</b>", 1)):
        orders.labels(country=country).incr(count, when=now - 60)
    page.goto(f"{base}/admin/django_redis_metrics/countermetric/chart/?name=orders&precision=60")
    page.wait_for_function(f"{CHART} && {CHART}.dataset.state")
    chart = page.locator("figure#counter-chart")
    assert chart.get_attribute("data-total") == "9"
    assert chart.get_attribute("data-parts") == "3"
    labels = page.locator("figure#counter-chart .u-legend .u-label").all_inner_texts()
    assert labels[1:] == ["orders", "country=FR", "country=DE", "country=<b>XX</b>"]  # as text
    values = page.locator("#breakdown-table tbody th").all_inner_texts()
    assert values == ["FR", "DE", "<b>XX</b>"]
    page.locator("#breakdown-table").get_by_role("link", name="DE", exact=True).click()
    page.wait_for_function(f"{CHART} && {CHART}.dataset.state && {CHART}.dataset.total === '3'")
    assert "country=DE" in page.url
    assert page.locator("figure#counter-chart").get_attribute("data-parts") == "1"
    shot(page, "counter-breakdown")
