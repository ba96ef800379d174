"""A labelled metric's page: its breakdown by one label's values (top values, others, filters
and group-by in the URL), escaped labels, the same page as before for a plain metric."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest

from django_redis_metrics import Counter, Gauge, Statistic
from django_redis_metrics.admin import breakdown

from ..django_site import admin_url, client_for, counting_round_trips, make_user

pytestmark = pytest.mark.django_db

XSS = "<script>alert(1)</script>"


def chart_url(model: str = "countermetric", suffix: str = "chart") -> str:
    return admin_url(model, suffix)


@pytest.fixture
def staff(backend: Any, settings: Any, frozen: float) -> Any:
    settings.ROOT_URLCONF = "tests.integration.urls"
    return client_for(make_user("analyst", staff=True, permitted=True))


def written_hits(frozen: float) -> dict[tuple[str, str], int]:
    """Writes to a labelled counter: (view, status) -> count, spread over the last hour."""
    hits = Counter("hits", labels=("view", "status"), precisions=[60, 3600])
    writes = {
        ("home", "2xx"): 30,
        ("home", "5xx"): 4,
        ("about", "2xx"): 12,
        ("cart", "2xx"): 7,
        ("cart", "4xx"): 2,
    }
    for (view, status), count in writes.items():
        for minutes in range(count):
            hits.labels(view=view, status=status).incr(when=frozen - 60 * (minutes % 50))
    return writes


def per(writes: dict[tuple[str, str], int], index: int) -> dict[str, int]:
    found: dict[str, int] = {}
    for key, count in writes.items():
        found[key[index]] = found.get(key[index], 0) + count
    return found


def table(response: Any) -> dict[str, dict[str, Any]]:
    assert response.status_code == 200
    return {row.value: row.figures for row in response.context["breakdown"].rows}


def test_the_table_totals_what_was_written_per_label_value(staff: Any, frozen: float) -> None:
    writes = written_hits(frozen)
    page = staff.get(chart_url() + "?name=hits&precision=60")
    found = table(page)
    assert {value: figures["total"] for value, figures in found.items()} == per(writes, 0)
    whole = sum(writes.values())
    assert found["home"]["share"] == pytest.approx(34 / whole)
    assert page.context["breakdown"].others is None  # three values, all in the top
    payload = page.context["payload"]
    assert payload["total"] == whole
    lines = {s["label"]: s for s in payload["series"] if s.get("part")}
    assert set(lines) == {"view=home", "view=about", "view=cart"}
    assert sum(lines["view=home"]["values"]) == 34
    # the table is sorted by total, largest first, and ?o= sorts it otherwise
    assert [row.value for row in page.context["breakdown"].rows] == ["home", "about", "cart"]
    by_value = staff.get(chart_url() + "?name=hits&precision=60&o=value")
    assert [row.value for row in by_value.context["breakdown"].rows] == ["about", "cart", "home"]
    assert b'id="breakdown-table"' in page.content


def test_group_by_and_filters_come_from_the_url(staff: Any, frozen: float) -> None:
    writes = written_hits(frozen)
    by_status = staff.get(chart_url() + "?name=hits&precision=60&by=status")
    assert {v: f["total"] for v, f in table(by_status).items()} == per(writes, 1)
    filtered = staff.get(chart_url() + "?name=hits&precision=60&view=home&view=cart")
    assert {v: f["total"] for v, f in table(filtered).items()} == {"home": 34, "cart": 9}
    assert filtered.context["payload"]["total"] == 43  # the chart is restricted too
    both = staff.get(chart_url() + "?name=hits&precision=60&by=status&view=cart&status=2xx")
    assert {v: f["total"] for v, f in table(both).items()} == {"2xx": 7}
    assert both.context["payload"]["total"] == 7
    # the filters and the group-by travel with every link of the page, the range's too
    context = both.context
    for url in (context["data_url"], *context["export_urls"].values()):
        assert "by=status" in url and "view=cart" in url and "status=2xx" in url
    assert all("view=cart" in url for _, _, url in context["precision_links"])
    assert ("view", "cart") in context["range_form"]["hidden"]
    data = staff.get(context["data_url"]).json()
    assert data["total"] == 7
    assert [s["label"] for s in data["series"] if s.get("part")] == ["status=2xx"]
    removed = dict((label, url) for label, _, url in context["breakdown"].filters)
    assert staff.get(removed["view"]).context["payload"]["total"] == 30 + 12 + 7
    assert staff.get(chart_url() + "?name=hits&by=colour").status_code == 404


def test_others_is_the_total_minus_the_top_values(staff: Any, frozen: float) -> None:
    pages = Counter("pages", labels=("path",), precisions=[60])
    written = {f"/p{i}": i + 1 for i in range(breakdown.TOP + 4)}
    for path, count in written.items():
        pages.labels(path=path).incr(count, when=frozen - 120)
    page = staff.get(chart_url() + "?name=pages&precision=60")
    rows = table(page)
    assert len(rows) == breakdown.TOP
    top = sorted(written.values(), reverse=True)[: breakdown.TOP]
    assert sorted((f["total"] for f in rows.values()), reverse=True) == top
    others = page.context["breakdown"].others
    assert others is not None and others.figures["total"] == sum(written.values()) - sum(top)
    line = next(s for s in page.context["payload"]["series"] if s["label"] == "others")
    assert sum(line["values"]) == others.figures["total"]


def test_label_values_are_escaped(staff: Any, frozen: float) -> None:
    Counter("odd", labels=("view",), precisions=[60]).labels(view=XSS).incr(3, when=frozen)
    page = staff.get(chart_url() + "?name=odd&precision=60")
    assert table(page)[XSS]["total"] == 3
    assert XSS.encode() not in page.content
    assert b"&lt;script&gt;alert(1)&lt;/script&gt;" in page.content
    script = page.content.split(b'id="counter-chart-data"')[1]
    assert b"\\u003Cscript\\u003E" in script  # json_script escapes the line's label
    chip = staff.get(chart_url() + "?name=odd&view=%3Cscript%3Ealert(1)%3C/script%3E")
    assert [label for label, _, _ in chip.context["breakdown"].filters] == ["view"]
    assert XSS.encode() not in chip.content
    csv_page = staff.get(page.context["export_urls"]["csv"])
    header = next(csv.reader(io.StringIO(csv_page.content.decode())))
    assert header == ["start", "label", f"view={XSS}", "value"]  # no cell starts a formula


def test_a_plain_counter_shows_its_page_as_before(staff: Any, frozen: float) -> None:
    Counter("plain", precisions=[60, 3600]).incr(5, when=frozen)
    page = staff.get(chart_url() + "?name=plain&precision=60&view=home")
    assert page.status_code == 200
    assert "breakdown" not in page.context
    assert b"drm-breakdown" not in page.content and b"breakdown-table" not in page.content
    assert page.context["data_url"].endswith("?name=plain&precision=60")
    assert [set(s) for s in page.context["payload"]["series"]] == [
        {"label", "values", "compare", "band"}
    ]
    assert page.context["payload"]["total"] == 5


@pytest.mark.parametrize(
    ("suffix", "query"), [("chart", "?name=hits"), ("data", "?name=hits&precision=60")]
)
def test_a_labelled_metrics_pages_are_guarded_as_the_others(
    staff: Any, frozen: float, suffix: str, query: str
) -> None:
    written_hits(frozen)
    url = chart_url("countermetric", suffix) + query
    assert client_for(None).get(url).status_code == 302
    visitor = make_user("visitor", staff=False, permitted=True)
    assert client_for(visitor).get(url).status_code == 302
    clerk = client_for(make_user("clerk", staff=True, permitted=False)).get(url)
    assert clerk.status_code == 403 and b"home" not in clerk.content
    assert staff.get(url).status_code == 200


def test_a_labelled_statistics_table_counts_and_measures_each_value(
    staff: Any, frozen: float
) -> None:
    latency = Statistic("latency", labels=("view", "method"), precisions=[60])
    written = {
        ("home", "GET"): [10.0, 20.0, 30.0],
        ("home", "POST"): [50.0],
        ("about", "GET"): [5.0, 5.0],
        ("cart", "GET"): [100.0] * 4,
    }
    for (view, method), values in written.items():
        for i, value in enumerate(values):
            latency.labels(view=view, method=method).record(value, when=frozen - 60 * i)
    page = staff.get(chart_url("statisticmetric") + "?name=latency&precision=60")
    found = table(page)
    assert {v: f["count"] for v, f in found.items()} == {"home": 4, "about": 2, "cart": 4}
    assert found["home"]["mean"] == pytest.approx(27.5)
    assert found["cart"]["p95"] == pytest.approx(100.0)
    assert found["about"]["share"] == pytest.approx(0.2)
    assert page.context["whole"]["count"] == 10  # the summary merges every series
    assert page.context["whole"]["mean"] == pytest.approx(
        sum(sum(v) for v in written.values()) / 10
    )
    lines = {s["label"]: s["values"] for s in page.context["payload"]["series"] if s.get("part")}
    assert set(lines) == {"view=home", "view=about", "view=cart"}
    assert lines["view=home"][-1] == pytest.approx(30.0)  # (10 + 50) / 2 in the newest slice
    by_method = staff.get(chart_url("statisticmetric") + "?name=latency&precision=60&by=method")
    assert {v: f["count"] for v, f in table(by_method).items()} == {"GET": 9, "POST": 1}
    post = staff.get(chart_url("statisticmetric") + "?name=latency&precision=60&method=POST")
    assert {v: f["count"] for v, f in table(post).items()} == {"home": 1}
    assert post.context["whole"]["mean"] == pytest.approx(50.0)
    assert "method=POST" in post.context["data_url"]
    data = staff.get(post.context["data_url"]).json()
    assert [s["label"] for s in data["series"] if s.get("part")] == ["view=home"]
    sorted_by_mean = staff.get(chart_url("statisticmetric") + "?name=latency&o=-mean")
    assert [r.value for r in sorted_by_mean.context["breakdown"].rows] == ["cart", "home", "about"]


def test_a_plain_statistic_shows_its_page_as_before(staff: Any, frozen: float) -> None:
    Statistic("plain_latency", precisions=[60]).record(12.0, when=frozen)
    page = staff.get(chart_url("statisticmetric") + "?name=plain_latency&precision=60&view=x")
    assert page.status_code == 200
    assert "breakdown" not in page.context and b"drm-breakdown" not in page.content
    assert page.context["data_url"].endswith("?name=plain_latency&precision=60")
    assert [s["label"] for s in page.context["payload"]["series"]] == [
        "mean",
        "p50 (band's low edge)",
        "p95 (band's high edge)",
    ]
    assert page.context["whole"]["count"] == 1


def test_a_labelled_gauges_lines_add_its_series_last_values(staff: Any, frozen: float) -> None:
    queue = Gauge("queue", labels=("queue", "host"), precisions=[60])
    sizes = {("mail", "a"): 5.0, ("mail", "b"): 7.0, ("jobs", "a"): 3.0}
    for (name, host), size in sizes.items():
        series = queue.labels(queue=name, host=host)
        series.set(size + 100, when=frozen - 120)
        series.set(size, when=frozen)
    page = staff.get(chart_url("gaugemetric") + "?name=queue&precision=60")
    found = table(page)
    assert {v: f["last"] for v, f in found.items()} == {"mail": 12.0, "jobs": 3.0}
    assert found["mail"]["max"] == 212.0
    assert {
        v: f["last"]
        for v, f in table(
            staff.get(chart_url("gaugemetric") + "?name=queue&precision=60&by=host")
        ).items()
    } == {"a": 8.0, "b": 7.0}
    main = page.context["payload"]["series"][0]
    assert main["values"][-1] == 15.0 and main["values"][-3] == 315.0
    only_b = staff.get(chart_url("gaugemetric") + "?name=queue&precision=60&host=b")
    assert only_b.context["payload"]["series"][0]["values"][-1] == 7.0


def test_a_plain_gauge_shows_its_page_as_before(staff: Any, frozen: float) -> None:
    Gauge("plain_queue", precisions=[60]).set(4, when=frozen)
    page = staff.get(chart_url("gaugemetric") + "?name=plain_queue&precision=60&queue=x")
    assert page.status_code == 200
    assert "breakdown" not in page.context and b"drm-breakdown" not in page.content
    assert [s["label"] for s in page.context["payload"]["series"]] == [
        "last",
        "min (band's low edge)",
        "max (band's high edge)",
    ]
    assert page.context["current"] == 4


def test_the_series_are_read_in_one_round_whatever_their_number(
    single: Any, settings: Any, frozen: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    client = client_for(make_user("analyst", staff=True, permitted=True))
    pages = Counter("pages", labels=("path",), precisions=[60])
    url = chart_url() + "?name=pages&precision=60"

    def make(first: int, last: int) -> None:
        for i in range(first, last):
            pages.labels(path=f"/p{i}").incr(when=frozen)

    make(0, 2)
    with counting_round_trips(monkeypatch) as sent:
        assert client.get(url).status_code == 200
        few = sent.calls
        make(2, 60)
        sent.reset()
        response = client.get(url)
        many = sent.calls
    assert response.context["payload"]["total"] == 60
    assert response.context["breakdown"].read == 60
    # finding the metric (its meta, else its first series), the first read with the listing,
    # then every series in one pipelined round
    assert many == few <= 5


def test_the_series_read_are_bounded(
    staff: Any, frozen: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(breakdown, "MAX_READ", 3)
    pages = Counter("pages", labels=("path",), precisions=[60])
    for i in range(5):
        pages.labels(path=f"/p{i}").incr(when=frozen)
    page = staff.get(chart_url() + "?name=pages&precision=60")
    assert page.context["breakdown"].read == 3
    assert page.context["payload"]["total"] == 3
    assert "5 series match: the breakdown reads the first 3 by name" in page.content.decode()
    narrowed = staff.get(chart_url() + "?name=pages&precision=60&path=/p4")
    assert narrowed.context["payload"]["total"] == 1


def test_a_full_metric_says_how_many_label_sets_went_to_other(staff: Any, frozen: float) -> None:
    from django_redis_metrics.core.labels.admission import answers

    answers.clear()
    pages = Counter("paths", labels=("path",), precisions=[60], max_series=2)
    for i in range(5):
        pages.labels(path=f"/p{i}").incr(when=frozen)
    page = staff.get(chart_url() + "?name=paths&precision=60")
    assert page.context["payload"]["total"] == 5
    text = page.content.decode()
    assert "reached its max_series: 3 more label sets were written to its __other__" in text
    plain = staff.get(chart_url() + "?name=hits&precision=60")
    assert "max_series" not in plain.content.decode()
