"""The registry of kinds (``kinds.py``): every kind registered once, in cleaning order; the
cleaner loop, the Prometheus collector and the admin reach every registered kind, and a kind
registered later reaches the cleaner loop and the collector without a line of theirs changed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils.module_loading import import_string

from django_redis_metrics import (
    Counter,
    EventSeries,
    Gauge,
    Statistic,
    UniqueBitmap,
    UniqueEstimate,
    get_redis_connection,
)
from django_redis_metrics.admin import KIND_ADMINS
from django_redis_metrics.admin.common import KindPages
from django_redis_metrics.cleanup import CLEANERS, clean_all
from django_redis_metrics.core.base import Metric as BaseMetric
from django_redis_metrics.core.cleaning import TEMP_KIND, CleanupReport
from django_redis_metrics.core.keys import metric_key
from django_redis_metrics.core.kind import Kind
from django_redis_metrics.core.steps import Op, Steps
from django_redis_metrics.core.timeutil import When
from django_redis_metrics.exposition.collector import MetricsCollector
from django_redis_metrics.exposition.families import Draft
from django_redis_metrics.kinds import register, registered, unregister

#: What one metric of each kind that has a Prometheus family writes, and its name.
EXPOSED: dict[str, Callable[[], object]] = {
    "counter": lambda: Counter("exposed_counter").incr(),
    "bitmap": lambda: UniqueBitmap("exposed_bitmap").mark(1),
    "estimate": lambda: UniqueEstimate("exposed_estimate").add("item"),
    "statistic": lambda: Statistic("exposed_statistic").record(3),
    "gauge": lambda: Gauge("exposed_gauge").set(7),
}


def test_every_kind_registers_once_in_the_order_of_the_cleaners() -> None:
    kinds = registered()
    assert [kind.name for kind in kinds] == [
        "counter",
        "events",
        "bitmap",
        "estimate",
        "statistic",
        "gauge",
    ]
    models = (Counter, EventSeries, UniqueBitmap, UniqueEstimate, Statistic, Gauge)
    assert [kind.model for kind in kinds] == list(models)
    assert [kind.name for kind in kinds] == [model.KIND for model in models]


def test_a_kind_cannot_be_registered_twice() -> None:
    counter = registered()[0]
    with pytest.raises(ValueError, match="'counter' is already registered"):
        register(counter)
    with pytest.raises(KeyError):
        unregister("nothing")
    assert registered()[0] is counter


def test_every_registered_kind_is_cleaned_by_clean_all(backend: Any) -> None:
    reports = clean_all()
    assert [report.kind for report in reports] == [k.name for k in registered()] + [TEMP_KIND]
    assert list(CLEANERS) == [report.kind for report in reports]
    assert [CLEANERS[kind.name] for kind in registered()] == [k.cleaner for k in registered()]


def test_every_registered_kind_with_a_family_is_exposed_by_the_collector(backend: Any) -> None:
    exposed = [kind for kind in registered() if kind.exposition is not None]
    assert [kind.name for kind in exposed] == list(EXPOSED)  # a new family needs a row here
    for write in EXPOSED.values():
        write()
    families = {family.name: family for family in MetricsCollector().collect()}
    for kind in exposed:
        family = families[f"django_redis_metrics_exposed_{kind.name}"]
        assert family.samples, kind.name


@pytest.mark.django_db
def test_every_registered_kind_has_an_admin_page(single: Any, settings: Any) -> None:
    settings.ROOT_URLCONF = "tests.integration.urls"
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw"))
    assert list(KIND_ADMINS) == [kind.name for kind in registered()]
    for kind in registered():
        assert kind.admin is not None
        pages = import_string(kind.admin)
        assert isinstance(pages, KindPages)
        assert type(admin.site._registry[pages.model]) is KIND_ADMINS[kind.name]
        assert KIND_ADMINS[kind.name].__name__ == f"{kind.model.__name__}Admin"
        url = reverse(f"admin:django_redis_metrics_{pages.model._meta.model_name}_changelist")
        assert client.get(url).status_code == 200, kind.name
        for route, _, suffix in pages.pages:
            name = f"admin:django_redis_metrics_{pages.model._meta.model_name}_{suffix}"
            assert reverse(name).endswith(route)


class Toy(BaseMetric):
    """A kind of metric that exists only in this test: one number in one key."""

    KIND: ClassVar[str] = "toy"
    LABEL: ClassVar[str] = "toy"

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def key(self) -> str:
        return metric_key(self.KIND, self.name, "value")


def clean_toys(
    client: Any = None, *, now: When = None, passes: int = 0, dry_run: bool = False
) -> CleanupReport:
    """Deletes the toy "old" (the cleaning a real kind would do by retention)."""
    report = CleanupReport(Toy.KIND, dry_run=dry_run, metrics_checked=1)
    if not dry_run:
        report.items_removed = get_redis_connection().delete(Toy("old").key)
    return report


def toy_families() -> Steps[list[Draft]]:
    value = yield Op("get", Toy("kept").key)
    draft = Draft("toy_value", Toy.KIND, "gauge", "The toy's number.")
    draft.add("", {}, float(value))
    return [draft]


@pytest.fixture
def toy_kind() -> Iterator[Kind]:
    kind = register(Kind(model=Toy, cleaner=clean_toys, exposition=toy_families))
    try:
        yield kind
    finally:
        unregister(kind.name)


def test_a_kind_registered_later_is_cleaned_and_exposed(backend: Any, toy_kind: Kind) -> None:
    client = get_redis_connection()
    client.set(Toy("old").key, 1)
    client.set(Toy("kept").key, 42)
    assert registered()[-1] is toy_kind
    assert list(CLEANERS)[-2:] == ["toy", TEMP_KIND]  # the temporary keys are cleaned last

    reports = {report.kind: report for report in clean_all()}
    assert reports["toy"].items_removed == 1
    assert not client.exists(Toy("old").key)
    assert [r.kind for r in clean_all(kinds=["toy"])] == ["toy"]

    families = {family.name: family for family in MetricsCollector().collect()}
    assert [(s.labels, s.value) for s in families["django_redis_metrics_toy_value"].samples] == [
        ({}, 42.0)
    ]


def test_a_kind_unregistered_is_no_longer_cleaned(backend: Any, toy_kind: Kind) -> None:
    unregister(toy_kind.name)
    try:
        assert "toy" not in CLEANERS
        assert "toy" not in [report.kind for report in clean_all()]
    finally:
        register(toy_kind)
