"""Funnels declared in ``metrics.py``: collected at start-up, named by their binding (or their
``name=``), each with an admin page; bad declarations refused."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

import pytest

from django_redis_metrics import Funnel, UniqueBitmap
from django_redis_metrics.funnels import declared


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    declared.forget()
    yield
    declared.forget()


def test_the_app_declares_the_funnels_of_every_installed_apps_metrics_module(
    monkeypatch: Any,
) -> None:
    from django.apps import apps

    from django_redis_metrics import apps as app_module
    from django_redis_metrics.core.queries import declared as declared_metrics

    installed = [*apps.get_app_configs(), types.SimpleNamespace(name="tests.funnels.declaring_app")]
    monkeypatch.setattr(app_module.apps, "get_app_configs", lambda: installed)
    monkeypatch.setattr(
        app_module,
        "autodiscover_modules",
        lambda name: __import__(f"tests.funnels.declaring_app.{name}"),
    )
    try:
        apps.get_app_config("django_redis_metrics").ready()
        from tests.funnels.declaring_app import metrics

        found = declared.declared()
        assert list(found) == ["checkout", "purchase in a day"]  # not _private
        assert found["checkout"] is metrics.checkout and metrics.checkout.name == "checkout"
        assert found["purchase in a day"] is metrics.purchase
    finally:
        declared_metrics.forget()


def test_declare_by_hand() -> None:
    visited = UniqueBitmap("visited")
    funnel = declared.declare(Funnel([visited]), "signup")
    assert funnel.name == "signup" and declared.declared() == {"signup": funnel}
    again = declared.declare(Funnel([visited], name="signup"))
    assert declared.declared() == {"signup": again}  # replaced
    with pytest.raises(ValueError, match="needs a name"):
        declared.declare(Funnel([visited]))
    with pytest.raises(TypeError, match="Only a Funnel"):
        declared.declare(visited, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="printable"):
        declared.declare(Funnel([visited]), "bad\nname")


def test_at_most_max_declared(monkeypatch: Any) -> None:
    monkeypatch.setattr(declared, "MAX_DECLARED", 2)
    visited = UniqueBitmap("visited")
    declared.declare(Funnel([visited]), "a")
    declared.declare(Funnel([visited]), "b")
    declared.declare(Funnel([visited]), "b")  # a replacement is fine
    with pytest.raises(ValueError, match="At most 2"):
        declared.declare(Funnel([visited]), "c")
