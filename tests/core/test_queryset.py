"""Querysets over a kind's catalogue (``core/queries/queryset.py``), checked against a plain
model: a dict of metric name -> {label set -> count}, on a single node and on Redis Cluster."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import pytest
from django.core.exceptions import MultipleObjectsReturned, ObjectDoesNotExist
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Counter, EventSeries, Gauge, MetricDoesNotExist, Statistic
from django_redis_metrics.core.labels.admission import answers
from django_redis_metrics.core.labels.labelling import series_name
from django_redis_metrics.core.queries import selection

from ..asyncio_helpers import run

T0 = 1_700_000_000
PRECISIONS = [60, 3600]

NAMES = st.sampled_from(["a", "api.a", "api.b", "api.bb", "hits", "hits2", "z"])
VALUES = st.sampled_from(["home", "shop", "api", "ho"])
#: A world: plain counters (None -> count) or labelled ones ((view, status) -> count).
WORLD = st.dictionaries(
    NAMES,
    st.one_of(
        st.integers(1, 9),
        st.dictionaries(
            st.tuples(VALUES, st.sampled_from(["2xx", "5xx"])),
            st.integers(1, 9),
            min_size=1,
            max_size=4,
        ),
    ),
    max_size=5,
)
LOOKUP_VALUES = st.sampled_from(["a", "api", "api.b", "hits", "h", "home", "ho", "b", "s"])
LOOKUP = st.one_of(
    st.tuples(
        st.sampled_from(["name", "labels__view"]),
        st.sampled_from(["exact", "startswith", "contains", "icontains"]),
        LOOKUP_VALUES,
    ),
    st.tuples(
        st.sampled_from(["name", "labels__view"]),
        st.just("in"),
        st.lists(LOOKUP_VALUES, max_size=3),
    ),
    st.tuples(
        st.sampled_from(["name", "labels__status"]),
        st.just("regex"),
        st.sampled_from(["^a", "b$", "x", "5"]),
    ),
)


def write(world: dict[str, Any]) -> dict[str, tuple[str, dict[str, str], int]]:
    """Write ``world``; the rows it should give: member -> (name, labels, total)."""
    rows = {}
    for name, value in world.items():
        if isinstance(value, int):
            Counter(name, precisions=PRECISIONS).incr(value, when=T0)
            rows[name] = (name, {}, value)
            continue
        metric = Counter(name, precisions=PRECISIONS, labels=("view", "status"))
        for (view, status), count in value.items():
            metric.labels(view=view, status=status).incr(count, when=T0 + 60 * count)
            member = series_name(name, (("view", view), ("status", status)))
            rows[member] = (name, {"view": view, "status": status}, count)
    return rows


def started(row: tuple[str, dict[str, str], int]) -> int:
    """The start of the minute a row of :func:`write` was written in."""
    return (T0 + 60 * row[2] if row[1] else T0) // 60 * 60


def lookup_test(lookup: str, value: Any) -> Any:
    return {
        "exact": lambda text: text == value,
        "startswith": lambda text: text.startswith(value),
        "contains": lambda text: value in text,
        "icontains": lambda text: value.lower() in text.lower(),
        "in": lambda text: text in value,
        "regex": lambda text: re.search(value, text) is not None,
    }[lookup]


def model_selects(
    row: tuple[str, dict[str, str], int], field: str, lookup: str, value: Any
) -> bool:
    name, labels, _ = row
    text = name if field == "name" else labels.get(field.split("__")[1])
    return text is not None and lookup_test(lookup, value)(text)


FAST = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FAST
@given(
    world=WORLD,
    lookups=st.lists(st.tuples(LOOKUP, st.booleans()), max_size=3),
    order=st.sampled_from(["name", "-name", "total", "-total", "last_seen", "-last_seen"]),
    low=st.integers(0, 6),
    size=st.one_of(st.none(), st.integers(0, 6)),
)
def test_lookups_order_slices_and_counts_agree_with_a_plain_model(
    backend: Any,
    metrics_settings: Any,
    world: dict[str, Any],
    lookups: Any,
    order: str,
    low: int,
    size: int | None,
) -> None:
    metrics_settings(PREFIX=f"t{uuid.uuid4().hex[:12]}")  # a fresh world each example
    answers.clear()
    rows = write(world)
    queryset = Counter.objects.get_queryset()
    expected = dict(rows)
    for (field, lookup, value), negated in lookups:
        key = f"{field}__{lookup}"
        queryset = queryset.exclude(**{key: value}) if negated else queryset.filter(**{key: value})
        expected = {
            m: r for m, r in expected.items() if model_selects(r, field, lookup, value) != negated
        }
    field = order.lstrip("-")
    value_of = {
        "name": lambda m: m,
        "total": lambda m: rows[m][2],
        "last_seen": lambda m: started(rows[m]),
    }[field]
    if field == "name":
        names = sorted(expected, reverse=order.startswith("-"))
    else:
        sign = -1 if order.startswith("-") else 1
        names = sorted(expected, key=lambda m: (sign * value_of(m), m))
    high = None if size is None else low + size
    assert queryset.count() == len(names)
    assert queryset.exists() == bool(names)
    ordered = queryset.order_by(order)
    assert [row.name for row in ordered] == names
    assert [row.name for row in ordered[low:high]] == names[low:high]
    assert ordered[low:high].count() == len(names[low:high])
    first = ordered.first()
    assert (first.name if first else None) == (names[0] if names else None)
    assert queryset.total(3600) == sum(rows[m][2] for m in expected)
    by_view: dict[str, int] = {}
    for member in expected:
        view = rows[member][1].get("view")
        if view is not None:
            by_view[view] = by_view.get(view, 0) + rows[member][2]
    assert queryset.group_by("view").total(3600) == by_view
    slices: dict[int, int] = {}
    for member in expected:
        start = started(rows[member])
        slices[start] = slices.get(start, 0) + rows[member][2]
    assert queryset.series(60) == sorted(slices.items())


def test_rows_are_model_instances_with_their_family(backend: Any) -> None:
    hits = Counter("hits", precisions=[60, 3600], samples=7, labels=("view",))
    hits.labels(view="home").incr(when=T0)
    Counter("plain", precisions=[60], samples=5).incr(when=T0)
    series, plain = list(Counter.objects.order_by("name"))
    assert (series.family.name, series.label_pairs) == ("hits", (("view", "home"),))
    assert series.family.label_names == ("view",)
    assert (series.precisions, series.samples) == ((60, 3600), 7)
    assert (plain.name, plain.precisions, plain.family) == ("plain", (60,), None)
    assert Counter.objects.get(name="hits") == series
    assert Counter.objects.get("hits").name == "hits"  # get(name): the labelled metric itself
    assert Counter.objects.get(series.name) == series


def test_does_not_exist_and_multiple_objects_returned_are_each_models_own(backend: Any) -> None:
    Counter("a", precisions=[60]).incr(when=T0)
    Counter("ab", precisions=[60]).incr(when=T0)
    with pytest.raises(Counter.DoesNotExist) as missing:
        Counter.objects.get(name="zzz")
    assert isinstance(missing.value, LookupError | ObjectDoesNotExist | MetricDoesNotExist)
    assert isinstance(missing.value, LookupError) and isinstance(missing.value, ObjectDoesNotExist)
    with pytest.raises(LookupError):
        Counter.objects.get("zzz")  # get(name), as it always raised
    with pytest.raises(Counter.MultipleObjectsReturned) as many:
        Counter.objects.get(name__startswith="a")
    assert isinstance(many.value, MultipleObjectsReturned)
    assert Counter.DoesNotExist is not Gauge.DoesNotExist
    assert not issubclass(Counter.DoesNotExist, Gauge.DoesNotExist)
    assert Counter.MultipleObjectsReturned is not Statistic.MultipleObjectsReturned
    with pytest.raises(Gauge.DoesNotExist):
        Gauge.objects.get(name="a")


def test_bad_lookups_are_refused_before_reading(backend: Any) -> None:
    for bad, error in (
        ({"size": 1}, TypeError),
        ({"name__like": "a"}, TypeError),
        ({"name": 3.5}, TypeError),
        ({"name__in": "abc"}, TypeError),
        ({"name__regex": "("}, ValueError),
        ({"labels__view": "a\x1fb"}, ValueError),
    ):
        with pytest.raises(error):
            Counter.objects.filter(**bad)
    with pytest.raises(ValueError, match="order"):
        Counter.objects.order_by("size")
    with pytest.raises(ValueError, match="counters"):
        Gauge.objects.order_by("-total")
    with pytest.raises(TypeError, match="not those of the gauge kind"):
        Gauge.objects.filter().total(60)
    with pytest.raises(TypeError, match="not those of the gauge kind"):
        Gauge.objects.filter().group_by("view")
    with pytest.raises(ValueError, match="Negative"):
        Counter.objects.filter()[-1:]
    with pytest.raises(TypeError, match="slice"):
        Counter.objects.filter()[:3].filter(name="a")
    with pytest.raises(TypeError, match="slice"):
        Counter.objects.filter()[::2].exclude(name="a")
    with pytest.raises(TypeError, match="slice"):
        Counter.objects.filter()[1:].delete()


def test_a_page_in_name_order_reads_only_that_page(
    backend: Any, round_trips: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for index in range(30):
        Counter(f"api.{index:02}", precisions=[60]).incr(when=T0)
    Counter("other", precisions=[60]).incr(when=T0)
    monkeypatch.setattr(selection, "READ_PAGE", 4)  # reading every member: 8 round trips
    page = Counter.objects.filter(name__startswith="api.")[10:15]
    names: list[str] = []
    trips = round_trips(lambda: names.extend(row.name for row in page))
    assert names == [f"api.{i:02}" for i in range(10, 15)]
    # ZRANGEBYLEX LIMIT, then the shown rows' configuration (one packet per node it touches)
    assert trips == 2 if not backend.cluster else 2 <= trips <= 4
    assert round_trips(Counter.objects.filter(name__startswith="api.").count) == 1
    every = Counter.objects.filter(name__contains="api.")
    assert round_trips(every.count) == 8  # the other lookups read every member ...
    shown: list[str] = []
    trips = round_trips(lambda: shown.extend(row.name for row in every[10:15]))
    assert shown == names
    assert trips == 1 if not backend.cluster else 1 <= trips <= 3  # ... once per queryset


def test_delete_retires_every_key_of_the_selected_metrics(backend: Any) -> None:
    hits = Counter("hits", precisions=[60, 3600], labels=("view",))
    for view in ("home", "shop"):
        hits.labels(view=view).incr(when=T0)
    Counter("kept", precisions=[60]).incr(when=T0)
    assert Counter.objects.filter(name="hits").delete() == 2
    assert [row.name for row in Counter.objects.filter()] == ["kept"]
    assert not [key for key in backend.keys() if "{hits" in key]
    hits.labels(view="home").incr(when=T0)  # written again: listed again
    assert Counter.objects.filter(name="hits").count() == 1
    orders = EventSeries("orders", index=["kind"])
    orders.record(kind="a")
    latency = Statistic("latency", precisions=[60], labels=("view",))
    latency.labels(view="home").record(3, when=T0)
    assert EventSeries.objects.filter(name="orders").delete() == 1
    assert Statistic.objects.exclude(name="nothing").delete() == 1
    assert not [key for key in backend.keys() if "{orders" in key or "{latency" in key]
    assert (EventSeries.objects.count(), Statistic.objects.count()) == (0, 0)


def test_async_twins(backend: Any) -> None:
    Counter("a", precisions=[60]).incr(2, when=T0)
    Counter("b", precisions=[60]).incr(3, when=T0)

    async def main() -> Any:
        queryset = Counter.objects.filter(name__in=["a", "b"])
        names = [row.name async for row in queryset]
        return (
            names,
            await queryset.acount(),
            await queryset.aexists(),
            (await Counter.objects.aget(name="b")).name,
            await queryset.atotal(60),
            await Counter.objects.filter(name="zz").aexists(),
        )

    assert run(main) == (["a", "b"], 2, True, "b", 5, False)

    async def missing() -> None:
        await Counter.objects.aget(name="zz")

    with pytest.raises(Counter.DoesNotExist):
        run(missing)
    assert asyncio.iscoroutinefunction(Counter.objects.aget)


def test_slices_of_slices_are_clipped_as_lists_are(backend: Any) -> None:
    for name in "abcdef":
        Counter(name, precisions=[60]).incr(when=T0)
    names = list("abcdef")
    queryset = Counter.objects.filter()
    for outer in (slice(1, 5), slice(2, None), slice(4, 2), slice(0, 0)):
        for inner in (slice(1, 3), slice(3, 1), slice(0, None), slice(5, 9)):
            expected = names[outer][inner]
            assert [row.name for row in queryset[outer][inner]] == expected, (outer, inner)
            assert queryset[outer][inner].count() == len(expected)
    assert [row.name for row in queryset[::2]] == names[::2]
    assert queryset[2].name == "c"
    with pytest.raises(IndexError):
        queryset[6]
