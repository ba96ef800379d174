"""The Prometheus endpoint: who reads it, in which format, what a scrape costs, and that the
per-kind families of earlier releases (a ``metric`` label) are gone."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as openmetrics_families,
)

from django_redis_metrics import Counter, Gauge, Statistic, UniqueBitmap, UniqueEstimate

from ..django_site import client_for, make_user
from ..roundtrips import RoundTrips
from .scraping import NS, families, samples, scrape

pytestmark = pytest.mark.django_db


def test_text_format_by_default(exposition: str) -> None:
    Counter("hits").incr()
    response = scrape(exposition)
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/plain; version=0.0.4")
    assert response["Cache-Control"] == "no-store"
    assert samples(exposition)[(f"{NS}_hits_total", ())] == 1


def test_openmetrics_when_the_scraper_asks(exposition: str) -> None:
    """Every kind, labelled and plain, parsed by the OpenMetrics parser (stricter than the
    text format's: histograms' buckets, counts and sums checked)."""
    Counter("hits", labels=("view",)).labels(view="home").incr(2)
    Counter("signups").incr()
    latency = Statistic("latency", labels=("view",))
    latency.labels(view="home").record(5)
    latency.labels(view="search").record_many([0.5, 12, 300])
    Statistic("sizes").record(1024)
    Gauge("depth", labels=("queue",)).labels(queue="mail").set(3)
    UniqueBitmap("active", labels=("plan",)).labels(plan="pro").mark(1)
    UniqueEstimate("searchers").add("a")
    response = scrape(exposition, Accept="application/openmetrics-text; version=1.0.0")
    assert response["Content-Type"].startswith("application/openmetrics-text")
    text = response.content.decode()
    assert text.endswith("# EOF\n")
    found = {f.name: f for f in openmetrics_families(text)}
    (sample,) = found[f"{NS}_hits"].samples
    assert sample.name == f"{NS}_hits_total"
    assert sample.labels == {"view": "home"} and sample.value == 2
    assert found[f"{NS}_latency"].type == "histogram"
    assert {"signups", "sizes", "depth", "active", "searchers"} <= {
        name.removeprefix(f"{NS}_") for name in found
    }


def test_the_families_of_earlier_releases_are_gone(exposition: str) -> None:
    """Replaced, not kept beside (docs/prometheus.md, "Migrating"): no family per kind, no
    ``metric`` label, whatever kind wrote."""
    Counter("signups").incr()
    Gauge("queue").set(3)
    Statistic("latency:home").record(12)
    UniqueBitmap("visitors").mark(1)
    UniqueEstimate("searchers").add("a")
    served = families(exposition)
    old = {"counter", "gauge", "statistic", "unique_users", "unique_estimate"}
    assert not {f"{NS}_{name}" for name in old} & set(served)
    assert all("metric" not in s.labels for f in served.values() for s in f.samples)
    assert {f"{NS}_signups", f"{NS}_queue", f"{NS}_latency_home", f"{NS}_visitors"} <= set(served)


def test_a_scrape_costs_the_same_round_trips_for_ten_or_a_thousand_series(
    exposition: str, backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every series of every kind read together (the gather driver), in pipelines of 1,000
    reads: no model built and read per name."""
    hits = Counter("hits", labels=("view",), max_series=2000)
    latency = Statistic("latency", labels=("view",), max_series=2000)

    def write(views: range) -> None:
        for view in views:
            hits.labels(view=view).incr()
            latency.labels(view=view).record(view + 1)
            Gauge(f"queue{view}").set(view)

    trips = RoundTrips(monkeypatch)
    write(range(10))
    few = trips.measure(lambda: scrape(exposition))
    write(range(10, 300))
    many = trips.measure(lambda: scrape(exposition))
    assert len(samples(exposition)) > 300 * 3
    # 900 more reads fit in the same pipelines on one node; a cluster pipeline sends one
    # packet per node it reaches, whatever the reads (at most one per node more).
    assert many <= few + (len(backend.client.get_nodes()) if backend.cluster else 0)


def test_the_garbage_collector_is_left_as_it_was_found(
    exposition: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paused while a scrape builds its objects (docs/prometheus.md, "What a scrape costs"),
    enabled again after, even when the scrape fails; never enabled by a scrape if the process
    had disabled it."""
    import gc

    from django_redis_metrics.core.connection import reset_connections
    from django_redis_metrics.exposition import collector

    seen: list[bool] = []
    real = collector.gather

    def watching(*args: Any, **kwargs: Any) -> Any:
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(collector, "gather", watching)
    Counter("hits").incr()
    assert gc.isenabled()
    assert scrape(exposition).status_code == 200
    assert seen == [False] and gc.isenabled()
    gc.disable()
    try:
        assert scrape(exposition).status_code == 200
        assert not gc.isenabled()
    finally:
        gc.enable()
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "CONNECTION": "redis://127.0.0.1:1/0",
        "CLUSTER": False,
    }
    reset_connections()
    assert scrape(exposition).status_code == 503
    assert gc.isenabled()


def test_closed_without_a_token(exposition: str) -> None:
    response = Client().get(exposition)
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"


def test_closed_with_a_wrong_token(exposition: str) -> None:
    response = Client().get(exposition, headers={"Authorization": "Bearer not-the-token-at-all"})
    assert response.status_code == 401
    assert "invalid_token" in response["WWW-Authenticate"]


def test_a_token_opens_nothing_when_none_is_set(exposition: str, settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "EXPORT_TOKEN": None}
    assert scrape(exposition).status_code == 401
    assert Client().get(exposition, headers={"Authorization": "Bearer "}).status_code == 401


def test_staff_need_the_permission(exposition: str) -> None:
    Counter("hits").incr()
    assert (
        client_for(make_user("eve", staff=False, permitted=False)).get(exposition).status_code
        == 403
    )
    assert (
        client_for(make_user("mallory", staff=True, permitted=False)).get(exposition).status_code
        == 403
    )
    allowed = client_for(make_user("olga", staff=True, permitted=True)).get(exposition)
    assert allowed.status_code == 200
    assert f"{NS}_hits_total 1.0".encode() in allowed.content


def test_redis_away_is_a_503(exposition: str, settings: Any) -> None:
    from django_redis_metrics.core.connection import reset_connections

    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "CONNECTION": "redis://127.0.0.1:1/0",
        "CLUSTER": False,
    }
    reset_connections()
    assert scrape(exposition).status_code == 503
