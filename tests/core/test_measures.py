"""A queryset's aggregates (``core/queries/measures.py``) over statistics, against a plain model,
and their cost in round trips (counters are checked with the lookups in test_queryset.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Counter, EventSeries, Statistic
from django_redis_metrics.core.labels.admission import answers
from django_redis_metrics.core.queries.measures import measure_of

T0 = 1_700_000_000
FAST = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FAST
@given(
    world=st.dictionaries(
        st.tuples(st.sampled_from(["latency", "size"]), st.sampled_from(["home", "shop", "api"])),
        st.lists(st.integers(1, 1000), min_size=1, max_size=5),
        max_size=5,
    ),
    views=st.lists(st.sampled_from(["home", "shop", "api"]), max_size=2),
)
def test_statistic_aggregates_merge_the_selected_series(
    backend: Any, metrics_settings: Any, world: dict[tuple[str, str], list[int]], views: list[str]
) -> None:
    metrics_settings(PREFIX=f"t{uuid.uuid4().hex[:12]}")
    answers.clear()
    for (name, view), values in world.items():
        series = Statistic(name, precisions=[60, 3600], labels=("view",)).labels(view=view)
        for offset, value in enumerate(values):
            series.record(value, when=T0 + 60 * offset)
    selected = Statistic.objects.filter(labels__view__in=views)
    chosen = {key: values for key, values in world.items() if key[1] in views}
    every = [value for values in chosen.values() for value in values]
    total = selected.total(3600)
    assert total["count"] == len(every)
    assert total["sum"] == (sum(every) if every else None)
    assert (total["min"], total["max"]) == ((min(every), max(every)) if every else (None, None))
    per_minute: dict[int, list[int]] = {}
    for values in chosen.values():
        for offset, value in enumerate(values):
            per_minute.setdefault((T0 + 60 * offset) // 60 * 60, []).append(value)
    assert [(start, s["count"]) for start, s in selected.series(60)] == [
        (start, len(values)) for start, values in sorted(per_minute.items())
    ]
    by_view = {
        view: sum(len(v) for (_, seen), v in chosen.items() if seen == view)
        for view in {seen for _, seen in chosen}
    }
    grouped = selected.group_by("view").total(3600)
    assert {view: summary["count"] for view, summary in grouped.items()} == by_view


def test_aggregates_cost_one_round_trip_per_node_whatever_the_series(
    backend: Any, round_trips: Any
) -> None:
    hits = Counter("hits", precisions=[60, 3600], labels=("view",))

    def trips(first: int, last: int) -> int:
        for index in range(first, last):
            hits.labels(view=f"v{index:02}").incr(index, when=T0)
        selected = Counter.objects.filter(name="hits")
        results: list[Any] = []
        count = round_trips(lambda: results.append(selected.group_by("view").total(3600)))
        assert sum(results[0].values()) == sum(range(last))
        return count

    few = trips(0, 5)
    many = trips(5, 60)
    nodes = 3 if backend.cluster else 1
    # the catalogue page, the rows' configuration, their samples: one packet per node each
    assert few <= many <= 1 + 2 * nodes


def test_the_refusal_of_an_aggregate_names_the_kind_in_english() -> None:
    """Found following docs/querysets.md: ``EventSeries.objects.filter(...).total()`` said
    "not of event seriess". Reads nothing from Redis."""
    with pytest.raises(TypeError) as raised:
        measure_of(EventSeries, "total()")
    assert "seriess" not in str(raised.value), str(raised.value)
