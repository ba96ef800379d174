"""MetricsMiddleware's labelled metrics: ``hits`` by view and status class, ``latency`` by
view, the caps on view labels, and the data of the versions before labels still counted."""

from __future__ import annotations

import time
from typing import Any

import pytest
from django.test import Client, RequestFactory
from django.urls import resolve, reverse

from django_redis_metrics import Counter, Statistic
from django_redis_metrics.core.drive import drive
from django_redis_metrics.core.labels.aggregate import series_of_steps
from django_redis_metrics.middleware import queue_request_writes, request_plan
from django_redis_metrics.sending import sender
from django_redis_metrics.sending.writes import Submission, Writes, build_batch

from ..django_site import counting_round_trips

pytestmark = pytest.mark.django_db

HITS = Counter("hits", labels=("view", "status"))
LATENCY = Statistic("latency", labels=("view",))


def get(path: str) -> int:
    status = Client(raise_request_exception=False).get(path).status_code
    sender.flush()
    return status


def answers(view: str, status: str) -> int:
    return HITS.labels(view=view, status=status).total(86400)


def series_labels(metric: Any) -> list[dict[str, str]]:
    """The label sets a metric holds series of (``__other__`` as ``{}``)."""
    return sorted(
        (dict(s.label_pairs) for s in drive(series_of_steps(metric))),
        key=lambda d: (d.get("view", ""), d.get("status", "")),
    )


def test_hits_land_in_their_view_and_status_series(backend: Any, with_middleware: Any) -> None:
    paths = ("/sync/", "/sync/", "/moved/", "/missing/", "/broken/", "/nope/")
    assert [get(p) for p in paths] == [200, 200, 302, 404, 500, 404]
    assert answers("sync", "2xx") == 2
    assert answers("moved", "3xx") == 1
    assert answers("missing", "4xx") == 1
    assert answers("broken", "5xx") == 1
    assert answers("unresolved", "4xx") == 1  # never the raw path
    assert answers("sync", "5xx") == 0
    assert Counter("hits").total(86400) == 6  # read without labels: the site's hits
    assert series_labels(HITS) == [
        {"view": "broken", "status": "5xx"},
        {"view": "missing", "status": "4xx"},
        {"view": "moved", "status": "3xx"},
        {"view": "sync", "status": "2xx"},
        {"view": "unresolved", "status": "4xx"},
    ]


def test_response_times_land_in_their_view_series(backend: Any, with_middleware: Any) -> None:
    for path in ("/slow/?seconds=0.03", "/slow/?seconds=0.01", "/sync/", "/broken/"):
        get(path)
    slow = LATENCY.labels(view="slow").summary(60)
    assert slow["count"] == 2 and slow["min"] >= 10 and slow["max"] >= 30
    assert LATENCY.labels(view="broken").summary(60)["count"] == 1
    assert Statistic("latency").totals()["count"] == 4  # every request timed
    assert series_labels(LATENCY) == [
        {"view": "broken"},
        {"view": "slow"},
        {"view": "sync"},
    ]


def test_views_past_the_cap_are_the_other_view(single: Any, with_middleware: Any) -> None:
    with_middleware.DJANGO_REDIS_METRICS = {
        **with_middleware.DJANGO_REDIS_METRICS,
        "MAX_VIEW_COUNTERS": 2,
    }
    for path in ("/sync/", "/class/", "/articles/a/", "/missing/", "/sync/", "/nope/"):
        get(path)
    assert answers("sync", "2xx") == 2
    assert answers("class", "2xx") == 1
    assert answers("other", "2xx") == 1  # the article
    assert answers("other", "4xx") == 1  # missing
    assert answers("unresolved", "4xx") == 1  # not a view: never takes a place under the cap
    views = {labels["view"] for labels in series_labels(HITS)}
    assert views == {"sync", "class", "other", "unresolved"}
    assert {labels["view"] for labels in series_labels(LATENCY)} == views
    assert Counter("hits").total(86400) == 6
    plan = request_plan()
    assert plan.hits is not None and plan.latency is not None
    assert (plan.hits.max_series, plan.latency.max_series) == (4 * 4, 4)


def test_max_series_holds_every_view_a_process_labels(single: Any, with_middleware: Any) -> None:
    """Above ``MAX_SERIES``' default (1,000): 502 view labels in 4 classes are 2,008 series."""
    plan = request_plan()
    assert plan.hits is not None and plan.latency is not None
    assert plan.hits.max_series == 4 * (500 + 2)
    assert plan.latency.max_series == 500 + 2


def test_a_view_name_that_cannot_be_a_label_is_the_other_view(
    single: Any, with_middleware: Any
) -> None:
    request = RequestFactory().get("/sync/")
    request.resolver_match = resolve("/sync/")
    request.resolver_match.view_name = "v" * 101  # longer than a label value may be
    writes = Writes()
    queue_request_writes(request, writes, status=200, elapsed_ms=1.0)
    sender.submit(writes)
    sender.flush()
    assert answers("other", "2xx") == 1


def test_our_own_endpoints_and_excluded_views_write_no_series(
    single: Any, with_middleware: Any
) -> None:
    assert get(reverse("django_redis_metrics:prometheus")) == 401
    assert get("/health/") == 200
    assert get("/admin/login/") == 200
    assert series_labels(HITS) == [] and series_labels(LATENCY) == []
    assert Counter("hits").total(86400) == 0


def test_a_hundred_requests_to_one_view_in_one_second_are_one_increment(
    single: Any, with_middleware: Any
) -> None:
    """The plan's series are long-lived objects, so the sender merges them (by identity)."""
    second = int(time.time())  # read once: every request in the same second
    submissions = []
    for _ in range(100):
        request = RequestFactory().get("/sync/")
        request.resolver_match = resolve("/sync/")
        writes = Writes()
        queue_request_writes(request, writes, status=200, elapsed_ms=5.0)
        submissions.append(Submission(writes, second))
    batch = build_batch(submissions)
    # one counter increment (the hits series) and one statistic call (the latency series)
    assert [call.keys[0].split(":", 2)[1:] for call in batch.calls] == [
        ["counter", "{hits\x1fview=sync\x1fstatus=2xx}:meta"],
        ["statistic", "{latency\x1fview=sync}:meta"],
    ]
    batch.execute()
    assert answers("sync", "2xx") == 100
    assert LATENCY.labels(view="sync").totals()["count"] == 100


def test_a_new_view_costs_one_admission_round_trip_once(
    single: Any, with_middleware: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's writes are one round trip; the first request of a view (a status class)
    new to the process adds one, admitting its series together."""
    get("/sync/")  # connection handshake and script loading happen once
    with counting_round_trips(monkeypatch) as sent:
        sent.reset()
        get("/class/")  # two new series (hits of 2xx, latency): admitted in one round trip
        assert sent.calls == 2
        for path in ("/class/", "/sync/"):
            sent.reset()
            get(path)
            assert sent.calls == 1, path
    assert Counter("hits").total(86400) == 4


def test_hits_written_before_labels_still_add_up(single: Any, with_middleware: Any) -> None:
    """The previous version wrote ``hits`` unlabelled: its data and the new series are one
    total across the upgrade."""
    Counter("hits").incr(7)  # what the last version wrote
    get("/sync/")
    get("/sync/")
    assert Counter("hits").total(86400) == 9
    assert Counter("hits").lifetime_total() == 9


def test_the_names_before_labels_are_written_too_when_set(
    single: Any, with_middleware: Any
) -> None:
    with_middleware.DJANGO_REDIS_METRICS = {
        **with_middleware.DJANGO_REDIS_METRICS,
        "VIEW_COUNTER": "hits:{view}",
        "VIEW_STATUS": "status:{view}:{class}",
        "VIEW_TIMER": "latency:{view}",
    }
    get("/sync/")
    get("/missing/")
    assert Counter("hits:sync").total(86400) == 1
    assert Counter("status:missing:4xx").total(86400) == 1
    assert Statistic("latency:sync").totals()["count"] == 1
    assert answers("sync", "2xx") == 1  # and the labelled series, as always
    assert Counter("hits").total(86400) == 2


def test_by_default_no_name_of_the_versions_before_labels_is_written(
    single: Any, with_middleware: Any
) -> None:
    get("/sync/")
    assert not Counter("hits:sync").exists()
    assert not Counter("status:sync:2xx").exists()
    assert not Statistic("latency:sync").exists()


def test_none_turns_each_labelled_metric_off(single: Any, with_middleware: Any) -> None:
    with_middleware.DJANGO_REDIS_METRICS = {
        **with_middleware.DJANGO_REDIS_METRICS,
        "LATENCY_STATISTIC": None,
    }
    get("/sync/")
    assert answers("sync", "2xx") == 1
    assert series_labels(LATENCY) == []
    with_middleware.DJANGO_REDIS_METRICS = {
        **with_middleware.DJANGO_REDIS_METRICS,
        "HITS_COUNTER": None,
        "LATENCY_STATISTIC": "timing",
    }
    get("/sync/")
    assert answers("sync", "2xx") == 1
    assert Statistic("timing", labels=("view",)).labels(view="sync").totals()["count"] == 1
