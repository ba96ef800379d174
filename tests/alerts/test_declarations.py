"""Declaring alerts: bad declarations refused with a clear error, nothing written; the alerts
of an app's metrics.py collected; the ALERTS setting checked (E080)."""

from __future__ import annotations

import types
from typing import Any

import pytest

from django_redis_metrics import Alert, Counter, EventSeries, Gauge, Statistic
from django_redis_metrics.alerts import collect, declared
from django_redis_metrics.alerts.options import AlertOptions
from django_redis_metrics.checks import check_settings

HITS = Counter("hits", precisions=[60, 3600], samples=10)


@pytest.mark.parametrize(
    ("make", "error", "words"),
    [
        (lambda: Alert("x", "hits", above=1), TypeError, "watches a Counter, Statistic or Gauge"),
        (lambda: Alert("x", EventSeries("e"), above=1), TypeError, "not <EventSeries"),
        (lambda: Alert("x", Gauge.objects.filter(name="g"), above=1), TypeError, "has no value"),
        (lambda: Alert("x", HITS), ValueError, "needs a threshold"),
        (lambda: Alert("x", HITS, above=1, below=5), ValueError, "must be less than above"),
        (lambda: Alert("x", HITS, above="10"), TypeError, "above must be a number"),
        (lambda: Alert("x", HITS, above=float("nan")), ValueError, "finite"),
        (lambda: Alert("x", HITS, above=1, over=0), ValueError, "over must be positive"),
        (lambda: Alert("x", HITS, above=1, over=1.5), TypeError, "over must be an int"),
        (lambda: Alert("x", HITS, above=1, for_=-1), ValueError, "for_ must be at least 0"),
        (lambda: Alert("x", HITS, above=1, over=86400), ValueError, "covers over=86400"),
        (lambda: Alert("x", HITS, above=1, measure="p95"), ValueError, "not counters"),
        (lambda: Alert("x", Statistic("s"), above=1), ValueError, "measure= must be one of"),
        (lambda: Alert("x", Statistic("s"), above=1, measure="p90"), ValueError, "'p90'"),
        (
            lambda: Alert("x", Gauge("g", labels=("host",)), above=1),
            TypeError,
            "watch one of its series",
        ),
        (lambda: Alert("{x}", HITS, above=1), ValueError, "braces"),
        (lambda: Alert("", HITS, above=1), ValueError, "empty"),
    ],
)
def test_bad_declarations_are_refused(make: Any, error: type[Exception], words: str) -> None:
    with pytest.raises(error, match=words.replace("(", r"\(").replace("?", r"\?")):
        make()


def test_a_declaration_reads_nothing(single: Any) -> None:
    Alert("quiet", HITS, above=1, over=3600, for_=600)
    assert single.keys() == []


def test_the_alerts_of_a_metrics_module_are_collected() -> None:
    module = types.ModuleType("shop.metrics")
    module.spike = Alert("spike", HITS, above=10)  # type: ignore[attr-defined]
    module.slow = Alert("slow", Statistic("t"), measure="p99", above=800)  # type: ignore[attr-defined]
    module.hits = HITS  # type: ignore[attr-defined]
    assert [a.name for a in collect(module)] == ["spike", "slow"]
    assert [a.name for a in declared()] == ["slow", "spike"]
    assert repr(declared()[1]) == "<Alert 'spike': counter hits over 300 s > 10>"


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ([], "ALERTS must be a dict"),
        ({"WEBHOOK": "x"}, "has no key 'WEBHOOK'"),
        ({"WEBHOOK_URL": "ftp://x"}, "http:// or https://"),
        ({"WEBHOOK_TIMEOUT": 0}, "WEBHOOK_TIMEOUT"),
        ({"WEBHOOK_ATTEMPTS": 0}, "WEBHOOK_ATTEMPTS"),
        ({"MAIL_ADMINS": "yes"}, "True or False"),
        ({"HISTORY": 10**6}, "at most 1000"),
    ],
)
def test_a_bad_alerts_setting_is_a_system_check_error(
    settings: Any, value: Any, words: str
) -> None:
    settings.DJANGO_REDIS_METRICS = {"ALERTS": value}
    errors = [e for e in check_settings() if e.id == "django_redis_metrics.E080"]
    assert len(errors) == 1 and words in errors[0].msg


def test_the_alerts_setting_defaults() -> None:
    assert AlertOptions.of({}) == AlertOptions(None, 5.0, 5, 30.0, False, 50, 30.0)
