"""Labelled metrics: series named by their labels, reads of the metric adding them up, and a
cap on the number of series that holds under racing writers (shown on counters; each kind's
own tests show its reads)."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Counter, Statistic, flush
from django_redis_metrics.core.keys import catalogue_key
from django_redis_metrics.core.labels.admission import answers
from django_redis_metrics.core.labels.labelling import OTHER, OVERFLOW_FIELD, split

from ..asyncio_helpers import run
from ..roundtrips import RoundTrips

DAY = 86400


def unique_counter(backend: Any, **options: Any) -> Counter:
    return Counter(f"hits-{backend.prefix[-6:]}", labels=("view", "status"), **options)


def test_labels_require_every_declared_label_and_good_values(single: Any) -> None:
    hits = Counter("hits", labels=("view", "status"))
    with pytest.raises(ValueError, match=r"missing \['status'\]"):
        hits.labels(view="home")
    with pytest.raises(ValueError, match=r"unknown \['colour'\]"):
        hits.labels(view="home", status="2xx", colour="red")
    with pytest.raises(TypeError, match="must be a str or an int, not float"):
        hits.labels(view="home", status=2.5)
    with pytest.raises(ValueError, match="braces or control characters"):
        hits.labels(view="a\x1fb", status="2xx")
    with pytest.raises(ValueError, match="1 to 100 characters"):
        hits.labels(view="x" * 101, status="2xx")
    with pytest.raises(ValueError, match="reserved"):
        hits.labels(view=OTHER, status="2xx")
    with pytest.raises(TypeError, match="declares no labels"):
        Counter("plain").labels(view="home")
    with pytest.raises(ValueError, match="identifiers"):
        Counter("bad", labels=("a-b",))
    with pytest.raises(ValueError, match="declared twice"):
        Counter("bad", labels=("a", "a"))
    assert hits.labels(view="home", status=200).label_pairs == (("view", "home"), ("status", "200"))
    assert hits.labels(view="home", status="2xx") is hits.labels(status="2xx", view="home")
    assert single.keys() == []  # nothing checked above wrote anything


def test_a_labelled_metric_refuses_writes_under_its_own_name(single: Any) -> None:
    hits = Counter("hits", labels=("view",))
    with pytest.raises(
        TypeError, match=r"write to one of its series, e\.g\. \.labels\(view=\.\.\.\)"
    ):
        hits.incr()
    with pytest.raises(TypeError, match="labelled"):
        hits.incr(defer=True)
    with pytest.raises(TypeError, match="labelled"):
        run(hits.aincr)
    assert single.keys() == []


def test_a_series_name_splits_back_into_its_metric_and_labels(single: Any) -> None:
    series = Counter("api.hits", labels=("view", "status")).labels(view="a=b", status=5)
    parsed = split(series.name)
    assert (parsed.name, parsed.labels, parsed.other) == (
        "api.hits",
        (("view", "a=b"), ("status", "5")),
        False,
    )
    assert split("api.hits") == split("api.hits").__class__("api.hits")


label_sets = st.lists(
    st.tuples(
        st.sampled_from(["home", "about", "cart", "x=y", "é"]),
        st.sampled_from(["2xx", "4xx", "5xx"]),
        st.integers(1, 50),
        st.integers(0, 3),  # days back
    ),
    max_size=25,
)


@settings(
    max_examples=10,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(writes=label_sets)
def test_the_metric_reads_as_the_sum_of_its_series(backend: Any, writes: list[Any]) -> None:
    now = time.time()
    hits = Counter(f"h-{uuid.uuid4().hex}", labels=("view", "status"))  # fresh per example
    model: dict[tuple[str, str], dict[int, int]] = {}
    for view, status, count, days in writes:
        when = now - days * DAY
        hits.labels(view=view, status=status).incr(count, when=when)
        day = int(when // DAY) * DAY
        slices = model.setdefault((view, status), {})
        slices[day] = slices.get(day, 0) + count
    expected: dict[int, int] = {}
    for slices in model.values():
        for day, count in slices.items():
            expected[day] = expected.get(day, 0) + count
    assert hits.series(DAY) == sorted(expected.items())
    assert hits.total(DAY) == sum(expected.values())
    assert Counter(hits.name).total(DAY) == sum(expected.values())  # undeclared: the same
    assert hits.lifetime_total() == sum(c for _, _, c, _ in writes)
    assert run(lambda: hits.atotal(DAY)) == sum(expected.values())
    for (view, status), slices in model.items():
        assert hits.labels(view=view, status=status).series(DAY) == sorted(slices.items())
    recent = hits.recent(DAY, 5, until=now)
    assert [start for start, _ in recent] == [
        int(now // DAY) * DAY - k * DAY for k in range(4, -1, -1)
    ]
    assert dict(recent) == {s: expected.get(s, 0) for s, _ in recent}


def test_a_metric_without_series_reads_in_one_round_trip(
    single: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    plain = Counter("plain")
    plain.incr(2, when=time.time())
    trips = RoundTrips(monkeypatch)
    assert trips(lambda: plain.total(DAY)) == 1
    assert plain.total(DAY) == 2
    labelled = Counter("labelled", labels=("view",))
    labelled.labels(view="a").incr(3, when=time.time())
    assert trips(lambda: labelled.total(DAY)) == 2  # the series' reads in one more
    assert labelled.total(DAY) == 3


def test_series_spread_over_the_cluster_slots(cluster: Any) -> None:
    from redis.cluster import key_slot

    hits = Counter("busy", labels=("view",))
    for view in ("a", "b", "c", "d", "e", "f", "g", "h"):
        hits.labels(view=view).incr(when=time.time())
    slots = {key_slot(key.encode()) for key in cluster.keys() if ":counter:" in key}
    assert len(slots) > 1
    assert hits.total(DAY) == 8


def test_the_cap_holds_under_racing_writers_and_the_rest_goes_to_other(backend: Any) -> None:
    answers.clear()
    hits = Counter("capped", labels=("view",), max_series=5)
    now = time.time()
    barrier = threading.Barrier(8)

    def writer(k: int) -> None:
        barrier.wait()
        for i in range(5):
            hits.labels(view=f"v{k}-{i}").incr(1, when=now)

    threads = [threading.Thread(target=writer, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    listed = backend.client.zrangebylex(catalogue_key("counter"), "[capped\x1f", "[capped\x1f\xff")
    names = sorted(split(m.decode()).labels for m in listed if OTHER not in m.decode())
    assert len(names) == 5
    other = hits.other_series()
    assert other.total(DAY) == 40 - 5
    assert hits.total(DAY) == 40
    assert int(backend.client.hget(other.meta_key, OVERFLOW_FIELD)) == 35


def test_a_refused_label_set_is_logged_once(single: Any, caplog: pytest.LogCaptureFixture) -> None:
    answers.clear()
    hits = Counter("small", labels=("view",), max_series=1)
    now = time.time()
    for view in ("a", "b", "c", "b"):
        hits.labels(view=view).incr(when=now)
    warnings = [r for r in caplog.records if "max_series" in r.getMessage()]
    assert len(warnings) == 1 and "'small'" in warnings[0].getMessage()
    assert hits.labels(view="a").total(DAY) == 1
    assert hits.other_series().total(DAY) == 3


def test_async_writes_are_admitted_too(backend: Any) -> None:
    answers.clear()
    hits = Counter("async-capped", labels=("view",), max_series=2)
    now = time.time()

    async def main() -> None:
        for i in range(40):
            await hits.labels(view=f"v{i % 4}").aincr(when=now)

    run(main)
    assert hits.total(DAY) == 40
    assert hits.other_series().total(DAY) == 20


def test_the_max_series_setting_is_checked(metrics_settings: Any, single: Any) -> None:
    with pytest.raises(ValueError, match="max_series must be at most 100000"):
        Counter("x", labels=("a",), max_series=10**6)
    metrics_settings(MAX_SERIES=3)
    assert Counter("x", labels=("a",)).max_series == 3
    assert Counter("x", labels=("a",)).labels(a=1).max_series == 3


def test_deferred_writes_are_admitted_by_the_sender(backend: Any) -> None:
    answers.clear()
    hits = Counter("deferred", labels=("view",), max_series=2)
    now = time.time()
    for i in range(30):
        hits.labels(view=f"v{i % 3}").incr(when=now, defer=True)
    assert flush()
    assert hits.total(DAY) == 30
    assert hits.labels(view="v0").total(DAY) == 10
    assert hits.other_series().total(DAY) == 10  # v2 came third: past the cap


def test_a_refused_write_to_a_new_series_stores_no_data(single: Any) -> None:
    hits = Counter("strict", labels=("view",))
    with pytest.raises(TypeError, match="count must be an int"):
        hits.labels(view="new").incr("1")
    assert [key for key in single.keys() if ":catalogue:" not in key] == []
    assert hits.total(DAY) == 0


@pytest.mark.django_db(transaction=True)  # clean_metrics archives
def test_series_are_listed_cleaned_and_exposed_like_metrics(backend: Any) -> None:
    from django.core.management import call_command

    hits = Counter("listed", labels=("view",))
    latency = Statistic("listed_ms", labels=("view",))
    now = time.time()
    hits.labels(view="a").incr(2, when=now)
    hits.labels(view="b").incr(3, when=now)
    latency.labels(view="a").record(12.5, when=now)
    call_command("clean_metrics", verbosity=0)
    assert hits.total(DAY) == 5 and latency.totals()["count"] == 1
    listed = {(m.name, m.family, m.label_pairs) for m in Counter.objects.all()}
    assert ("listed\x1fview=a", hits, (("view", "a"),)) in listed


def test_deleting_a_labelled_metric_deletes_its_series(backend: Any) -> None:
    hits = Counter("gone", labels=("view",))
    latency = Statistic("gone_ms", labels=("view",))
    now = time.time()
    for view in ("a", "b", "c"):
        hits.labels(view=view).incr(when=now)
        latency.labels(view=view).record(3.5, when=now)
    hits.delete()
    latency.delete()
    assert backend.keys() == []
    assert hits.total(DAY) == 0 and Counter.objects.names() == []
