"""One family per metric, labelled by its series' labels, of every kind: parsed as Prometheus
parses the text format, each sample's labels and value equal to what was written."""

from __future__ import annotations

import logging

import pytest

from django_redis_metrics import Counter, Gauge, Statistic, UniqueBitmap, UniqueEstimate
from django_redis_metrics.exposition.names import family_name, sanitise

from .scraping import NS, families, labelled, samples

pytestmark = pytest.mark.django_db


def test_a_labelled_counter_is_one_family_with_a_sample_per_series(exposition: str) -> None:
    hits = Counter("hits", labels=("view", "status"))
    written = {("home", "2xx"): 3, ("home", "5xx"): 1, ("about", "2xx"): 7}
    for (view, status), count in written.items():
        hits.labels(view=view, status=status).incr(count)
    hits.labels(view="home", status="2xx").incr(2, when=1_000)  # trimmed, still in the total
    family = families(exposition)[f"{NS}_hits"]
    assert family.type == "counter"
    found = {(s.labels["view"], s.labels["status"]): s.value for s in family.samples}
    assert found == {("home", "2xx"): 5, ("home", "5xx"): 1, ("about", "2xx"): 7}
    assert {s.name for s in family.samples} == {f"{NS}_hits_total"}
    assert all(set(s.labels) == {"view", "status"} for s in family.samples)


def test_a_plain_metric_is_a_family_of_its_own_without_labels(exposition: str) -> None:
    Counter("signups").incr(4)
    Gauge("queue").set(7, when=1_000)
    Gauge("queue").set(3)
    Gauge("queue").set(99, when=2_000)  # a backfill: older than the latest
    found = samples(exposition)
    assert found[(f"{NS}_signups_total", ())] == 4
    assert found[(f"{NS}_queue", ())] == 3


def test_the_other_series_reads_other_in_every_label(exposition: str) -> None:
    hits = Counter("hits", labels=("view", "status"), max_series=2)
    hits.labels(view="a", status="2xx").incr()
    hits.labels(view="b", status="2xx").incr(2)
    hits.labels(view="c", status="4xx").incr(5)  # past max_series: to __other__
    hits.labels(view="d", status="5xx").incr(6)
    assert labelled(samples(exposition), f"{NS}_hits_total") == {
        (("status", "2xx"), ("view", "a")): 1,
        (("status", "2xx"), ("view", "b")): 2,
        (("status", "__other__"), ("view", "__other__")): 11,
    }


def test_labelled_gauges_give_each_series_its_latest_value(exposition: str) -> None:
    depth = Gauge("queue_depth", labels=("queue",))
    depth.labels(queue="mail").set(12)
    depth.labels(queue="mail").set(4)
    depth.labels(queue="thumbs").set(-2.5)
    family = families(exposition)[f"{NS}_queue_depth"]
    assert family.type == "gauge"
    assert {s.labels["queue"]: s.value for s in family.samples} == {"mail": 4, "thumbs": -2.5}


def test_bitmaps_and_estimates_count_each_series_current_periods(exposition: str) -> None:
    visitors = UniqueBitmap("visitors", periods=("day", "month"), labels=("plan",))
    for user in (1, 2, 3):
        visitors.labels(plan="free").mark(user)
    visitors.labels(plan="pro").mark(9)
    UniqueBitmap("active", periods=("day",)).mark(5)
    searches = UniqueEstimate("searchers", periods=("day",), labels=("period",))
    for item in ("a", "b", "a", 7, "c"):
        searches.labels(period="q1").add(item)
    UniqueEstimate("tags", periods=("week",)).add("x")
    found = samples(exposition)
    assert labelled(found, f"{NS}_visitors") == {
        (("period", "day"), ("plan", "free")): 3,
        (("period", "month"), ("plan", "free")): 3,
        (("period", "day"), ("plan", "pro")): 1,
        (("period", "month"), ("plan", "pro")): 1,
    }
    assert found[(f"{NS}_active", (("period", "day"),))] == 1
    assert found[(f"{NS}_tags", (("period", "week"),))] == 1
    # A label of the metric's own named `period` is renamed, as Prometheus renames a clash.
    assert labelled(found, f"{NS}_searchers") == {(("exported_period", "q1"), ("period", "day")): 4}


def test_label_values_come_back_as_written(exposition: str) -> None:
    hits = Counter("hits", labels=("path",))
    odd = ['say "hi"', "back\\slash", "ünïcode ✓", "a=b,c"]
    for value in odd:
        hits.labels(path=value).incr()
    hits.labels(path=42).incr()
    found = labelled(samples(exposition), f"{NS}_hits_total")
    assert found == {(("path", value),): 1 for value in [*odd, "42"]}


def test_names_are_sanitised_to_the_exposition_format() -> None:
    assert sanitise("latency:home") == "latency_home"
    assert sanitise("api.calls-v2") == "api_calls_v2"
    assert sanitise("café") == "caf_"
    assert family_name(NS, sanitise("2fa.logins")) == f"{NS}_2fa_logins"
    assert family_name("", sanitise("2fa.logins")) == "_2fa_logins"


def test_sanitised_names_are_served(exposition: str) -> None:
    Counter("api.calls:v2").incr(2)
    Statistic("render time (ms)").record(5)
    found = samples(exposition)
    assert found[(f"{NS}_api_calls_v2_total", ())] == 2
    assert found[(f"{NS}_render_time__ms__count", ())] == 1


def test_of_two_names_sanitised_alike_one_is_served_the_other_logged(
    exposition: str, caplog: pytest.LogCaptureFixture
) -> None:
    Counter("api.calls").incr(1)
    Counter("api_calls").incr(2)  # needs no change: it keeps the name
    Counter("hits").incr(3)
    Gauge("hits_total").set(4)  # its sample name is the counter's
    Statistic("hits_total").record(5)  # and its family name the gauge's
    with caplog.at_level(logging.WARNING, logger="django_redis_metrics.exposition"):
        found = samples(exposition)
        samples(exposition)  # logged once per process, not once per scrape
    assert found[(f"{NS}_api_calls_total", ())] == 2
    assert found[(f"{NS}_hits_total", ())] == 3
    assert (f"{NS}_hits_total_count", ()) not in found
    assert len([key for key in found if key[0] == f"{NS}_hits_total"]) == 1
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 3
    assert any("'api.calls'" in m for m in messages)
    assert any("gauge 'hits_total'" in m for m in messages)
    assert any("statistic 'hits_total'" in m for m in messages)


def test_a_key_of_another_type_is_left_out_not_the_scrape(exposition: str) -> None:
    from django_redis_metrics import get_redis_connection
    from django_redis_metrics.core.keys import catalogue_key, metric_key

    client = get_redis_connection()
    for kind in ("counter", "statistic", "bitmap"):
        client.zadd(catalogue_key(kind), {"stray": 0})
        client.set(metric_key(kind, "stray", "meta"), "not a hash")
    client.zadd(catalogue_key("gauge"), {"gone": 0})  # listed, its keys expired meanwhile
    Counter("hits").incr()
    found = samples(exposition)
    assert found[(f"{NS}_hits_total", ())] == 1
    assert not [name for name, _ in found if "stray" in name or "gone" in name]


def test_a_sharded_counter_is_one_sample_its_shards_added(exposition: str) -> None:
    hot = Counter("hot", shards=4)
    for count in range(1, 41):
        hot.incr(count)
    family = families(exposition)[f"{NS}_hot"]
    assert [(s.labels, s.value) for s in family.samples] == [({}, 820)]
