"""Where the admin finds the middleware's per-view metrics: the labelled series, and the names
written before labels while no longer written; which statistics are milliseconds."""

from __future__ import annotations

from typing import Any

from django_redis_metrics import Counter, Statistic
from django_redis_metrics.admin import viewsource
from django_redis_metrics.admin.statistics import is_view_timer
from django_redis_metrics.admin.tilebase import Lookup
from django_redis_metrics.core.labels.labelling import SEPARATOR as S

HITS = Lookup(Counter.KIND, f"hits{S}")
LATENCY = Lookup(Statistic.KIND, f"latency{S}")
OLD_HITS = Lookup(Counter.KIND, "hits:")
OLD_STATUS = Lookup(Counter.KIND, "status:")
OLD_TIMER = Lookup(Statistic.KIND, "latency:")
FOUND = {
    HITS: [f"hits{S}view=home{S}status=2xx", f"hits{S}view=home{S}status=5xx", f"hits{S}__other__"],
    LATENCY: [f"latency{S}view=home"],
    OLD_HITS: ["hits:home", "hits:about"],
    OLD_STATUS: ["status:home:2xx", "status:nope"],
    OLD_TIMER: ["latency:home"],
}


def rows(entries: list[viewsource.PerView]) -> list[tuple[str, str, str, str]]:
    return [(e.view, e.role, e.status, e.source) for e in entries]


def test_the_series_and_the_old_names_no_longer_written(metrics_settings: Any) -> None:
    assert viewsource.lookups() == sorted([HITS, LATENCY, OLD_HITS, OLD_STATUS, OLD_TIMER])
    assert rows(viewsource.per_view(FOUND)) == [
        ("__other__", "hits", "", "labelled"),  # label sets past max_series
        ("about", "hits", "", "legacy"),  # counted before labels without a status class
        ("home", "status", "2xx", "labelled"),
        ("home", "status", "2xx", "legacy"),  # hits:home left out: its status counts it
        ("home", "status", "5xx", "labelled"),
        ("home", "timer", "", "labelled"),
        ("home", "timer", "", "legacy"),
    ]
    assert rows(viewsource.per_view(FOUND, frozenset({"status"}))) == [
        ("home", "status", "2xx", "labelled"),
        ("home", "status", "2xx", "legacy"),
        ("home", "status", "5xx", "labelled"),
    ]


def test_old_names_still_written_are_not_read(metrics_settings: Any) -> None:
    """Written for every request as well as the series: reading both would count twice."""
    metrics_settings(VIEW_COUNTER="hits:{view}", VIEW_STATUS="status:{view}:{class}")
    assert viewsource.lookups() == sorted([HITS, LATENCY, OLD_TIMER])
    assert {e.source for e in viewsource.per_view(FOUND) if e.role != "timer"} == {"labelled"}
    metrics_settings(HITS_COUNTER=None, LATENCY_STATISTIC="timing", VIEW_TIMER="t:{view}")
    assert viewsource.lookups() == [Lookup(Statistic.KIND, f"timing{S}")]


def test_a_series_is_made_from_its_metric_and_labels() -> None:
    meta = {b"60": b"10", b"3600": b"24"}
    series = viewsource.from_meta(Counter, f"hits{S}view=home{S}status=2xx", meta)
    assert series.family is not None and series.family.name == "hits"
    assert series.label_pairs == (("view", "home"), ("status", "2xx"))
    assert (series.precisions, series.samples) == ((60, 3600), 24)
    other = viewsource.from_meta(Counter, f"hits{S}__other__", meta)
    assert other.name == f"hits{S}__other__"
    assert viewsource.from_meta(Counter, "hits:home", meta).family is None


def test_the_middlewares_statistics_are_milliseconds(metrics_settings: Any) -> None:
    assert is_view_timer("latency") and is_view_timer(f"latency{S}view=home")
    assert is_view_timer("latency:home")  # written before labels
    assert not is_view_timer("sizes") and not is_view_timer(f"sizes{S}view=home")
    metrics_settings(LATENCY_STATISTIC="timing", VIEW_TIMER="t:{view}")
    assert is_view_timer(f"timing{S}view=home") and is_view_timer("t:home")
    assert not is_view_timer(f"latency{S}view=home")
