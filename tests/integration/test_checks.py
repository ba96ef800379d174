"""System checks of the Django integration settings (ids E040-E059)."""

from __future__ import annotations

from typing import Any

import pytest

from django_redis_metrics.checks import check_settings

W002 = "django_redis_metrics.W002"


def ids(settings: Any, **values: Any) -> list[str]:
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": "redis://localhost:1/0", **values}
    return [message.id for message in check_settings()]


def test_defaults_are_valid(settings: Any) -> None:
    assert ids(settings) == []


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"HITS_COUNTER": "a{b}"}, ["django_redis_metrics.E040"]),
        ({"ACTIVE_USERS": ""}, ["django_redis_metrics.E040"]),
        ({"UNRESOLVED_VIEW": None}, ["django_redis_metrics.E040"]),
        # the view labels of the middleware's metrics: also label values
        ({"OTHER_VIEW": "__other__"}, ["django_redis_metrics.E040"]),
        ({"UNRESOLVED_VIEW": "u" * 101}, ["django_redis_metrics.E040"]),
        ({"LATENCY_STATISTIC": ""}, ["django_redis_metrics.E056"]),
        ({"LATENCY_STATISTIC": "a\x1fb"}, ["django_redis_metrics.E056"]),
        ({"LATENCY_STATISTIC": 5}, ["django_redis_metrics.E056"]),
        ({"VIEW_COUNTER": "hits"}, ["django_redis_metrics.E041"]),
        ({"VIEW_COUNTER": "{{view}}"}, ["django_redis_metrics.E041"]),
        ({"VIEW_TIMER": "latency"}, ["django_redis_metrics.E052"]),
        ({"VIEW_TIMER": 3}, ["django_redis_metrics.E052"]),
        ({"VIEW_TIMER": "{view}}"}, ["django_redis_metrics.E052"]),
        ({"VIEW_STATUS": "status:{view}"}, ["django_redis_metrics.E053"]),
        ({"VIEW_STATUS": "status:{class}"}, ["django_redis_metrics.E053"]),
        ({"EXPORT_TOKEN": "short"}, ["django_redis_metrics.E054"]),
        ({"EXPORT_TOKEN": b"a-long-enough-bytes-token"}, ["django_redis_metrics.E054"]),
        ({"MAX_VIEW_COUNTERS": 0}, ["django_redis_metrics.E042"]),
        ({"MAX_VIEW_COUNTERS": True}, ["django_redis_metrics.E042"]),
        ({"EXCLUDE_VIEWS": "admin:*"}, ["django_redis_metrics.E043"]),
        ({"EXCLUDE_PATHS": ["static/"]}, ["django_redis_metrics.E043"]),
        ({"SENDER": {"TIMEOUT": 0}}, ["django_redis_metrics.E044"]),
        ({"SENDER": {"DELAY": -1}}, ["django_redis_metrics.E045"]),
        ({"SENDER": {"QUEUE_SIZE": 0}}, ["django_redis_metrics.E046"]),
        ({"SENDER": {"QUEUE_BYTES": 0}}, ["django_redis_metrics.E047"]),
        ({"SENDER": {"QUEUE_BYTES": "32MB"}}, ["django_redis_metrics.E047"]),
        ({"SENDER": {"RETRY_DELAY": 0}}, ["django_redis_metrics.E048"]),
        ({"SENDER": {"RETRY_MAX_DELAY": "5"}}, ["django_redis_metrics.E048"]),
        ({"SENDER": {"RETRY_DELAY": 2.0, "RETRY_MAX_DELAY": 1.0}}, ["django_redis_metrics.E048"]),
        # The flat keys SENDER replaced: still read and checked, with a warning to move them.
        ({"FAIL_OPEN_TIMEOUT": 0}, [W002, "django_redis_metrics.E044"]),
        ({"SEND_DELAY": -1}, [W002, "django_redis_metrics.E045"]),
        ({"SEND_QUEUE_SIZE": 0}, [W002, "django_redis_metrics.E046"]),
        ({"SEND_QUEUE_BYTES": 0}, [W002, "django_redis_metrics.E047"]),
        ({"SEND_QUEUE_BYTES": "32MB"}, [W002, "django_redis_metrics.E047"]),
        ({"SEND_RETRY_DELAY": 0}, [W002, "django_redis_metrics.E048"]),
        ({"SEND_RETRY_MAX_DELAY": "5"}, [W002, "django_redis_metrics.E048"]),
        (
            {"SEND_RETRY_DELAY": 2.0, "SEND_RETRY_MAX_DELAY": 1.0},
            [W002, W002, "django_redis_metrics.E048"],
        ),
    ],
)
def test_bad_values_are_reported(
    settings: Any, values: dict[str, Any], expected: list[str]
) -> None:
    assert ids(settings, **values) == expected


def test_features_can_be_turned_off(settings: Any) -> None:
    assert (
        ids(
            settings,
            HITS_COUNTER=None,
            LATENCY_STATISTIC=None,
            VIEW_COUNTER=None,
            VIEW_TIMER=None,
            VIEW_STATUS=None,
            ACTIVE_USERS=None,
            EXCLUDE_VIEWS=[],
            EXCLUDE_PATHS=[],
        )
        == []
    )


def test_the_names_before_labels_can_be_set_again(settings: Any) -> None:
    assert (
        ids(
            settings,
            VIEW_COUNTER="hits:{view}",
            VIEW_TIMER="latency:{view}",
            VIEW_STATUS="status:{view}:{class}",
        )
        == []
    )


def test_the_removed_cooldown_setting_is_an_unknown_key_saying_what_replaced_it(
    settings: Any,
) -> None:
    settings.DJANGO_REDIS_METRICS = {
        "CONNECTION": "redis://localhost:1/0",
        "FAIL_OPEN_COOLDOWN": 30,
    }
    [message] = check_settings()
    assert message.id == "django_redis_metrics.W001"
    assert "FAIL_OPEN_COOLDOWN was removed" in str(message.hint)
    assert "SENDER's RETRY_DELAY" in str(message.hint)
