"""Metrics declared in a ``metrics.py`` (``core/queries/declared.py``) are rows of their kind's
queryset until they hold data, in their place in every name-ordered page."""

from __future__ import annotations

import types
import uuid
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Counter
from django_redis_metrics.core.base import Metric
from django_redis_metrics.core.labels.labelling import series_name
from django_redis_metrics.core.queries import declared

T0 = 1_700_000_000
FAST = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def test_a_declared_metric_with_no_data_is_listed_with_its_declaration(backend: Any) -> None:
    signups = declared.declare(Counter("signups", precisions=[60, 86400]))
    views = declared.declare(Counter("views", labels=("page",)))
    try:
        Counter("active", precisions=[60]).incr(when=T0)
        rows = list(Counter.objects.filter())
        assert [row.name for row in rows] == ["active", "signups", "views"]
        assert rows[1] is signups and rows[1].precisions == (60, 86400)
        assert Counter.objects.count() == 3
        assert [row.name for row in Counter.objects.order_by("-name")[1:]] == ["signups", "active"]
        assert Counter.objects.get("signups") is signups
        views.labels(page="home").incr(when=T0)  # holds data now: its series are its rows
        assert [row.name for row in Counter.objects.filter(name="views")] == [
            series_name("views", (("page", "home"),))
        ]
        assert Counter.objects.filter(name__startswith="s").count() == 1
        assert Counter.objects.filter().delete() == 2  # the declared one holds no keys
    finally:
        declared.forget()


def test_apps_declare_the_metrics_of_their_metrics_module() -> None:
    module = types.ModuleType("someapp.metrics")
    module.orders = Counter("orders")  # type: ignore[attr-defined]
    module.not_a_metric = 3  # type: ignore[attr-defined]
    try:
        assert declared.collect(module, Metric) == [module.orders]  # type: ignore[attr-defined]
        assert declared.declared("counter") == {"orders": module.orders}  # type: ignore[attr-defined]
    finally:
        declared.forget()


@FAST
@given(
    written=st.sets(st.sampled_from(["b", "ba", "bb", "c", "ca", "d", "e"]), max_size=6),
    declared_names=st.sets(st.sampled_from(["a", "b", "bab", "c", "cb", "f"]), max_size=5),
    prefix=st.sampled_from(["", "b", "c", "x"]),
    reverse=st.booleans(),
    low=st.integers(0, 8),
    size=st.one_of(st.none(), st.integers(0, 8)),
)
def test_declared_metrics_take_their_place_in_every_page(
    backend: Any,
    metrics_settings: Any,
    written: set[str],
    declared_names: set[str],
    prefix: str,
    reverse: bool,
    low: int,
    size: int | None,
) -> None:
    """The slice read by ZRANGEBYLEX LIMIT, with declared metrics holding no data merged in by
    their place, is the slice of the plain model's sorted names."""
    metrics_settings(PREFIX=f"t{uuid.uuid4().hex[:12]}")
    for name in written:
        Counter(name, precisions=[60]).incr(when=T0)
    try:
        for name in declared_names:
            declared.declare(Counter(name, precisions=[60]))
        everything = sorted((written | declared_names), reverse=reverse)
        expected = [name for name in everything if name.startswith(prefix)]
        queryset = Counter.objects.order_by("-name" if reverse else "name")
        if prefix:
            queryset = queryset.filter(name__startswith=prefix)
        high = None if size is None else low + size
        assert queryset.count() == len(expected)
        assert [row.name for row in queryset[low:high]] == expected[low:high]
        assert queryset[low:high].count() == len(expected[low:high])
    finally:
        declared.forget()


def test_the_app_declares_the_metrics_of_every_installed_apps_metrics_module(
    backend: Any, monkeypatch: Any
) -> None:
    from django.apps import apps

    from django_redis_metrics import Statistic
    from django_redis_metrics import apps as app_module

    installed = [*apps.get_app_configs(), types.SimpleNamespace(name="tests.core.declaring_app")]
    monkeypatch.setattr(app_module.apps, "get_app_configs", lambda: installed)
    monkeypatch.setattr(
        app_module,
        "autodiscover_modules",
        lambda name: __import__(f"tests.core.declaring_app.{name}"),
    )
    try:
        apps.get_app_config("django_redis_metrics").ready()
        from tests.core.declaring_app import metrics

        assert Counter.objects.get(name="declared.signups") is metrics.signups
        assert [row.name for row in Statistic.objects.filter(name__startswith="declared.")] == [
            "declared.latency"
        ]
    finally:
        declared.forget()
