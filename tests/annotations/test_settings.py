"""The annotations' settings and their system checks (E060-E064)."""

from __future__ import annotations

from typing import Any

import pytest

from django_redis_metrics.checks import check_settings

TOKEN = "a-secret-of-32-characters-000000"


def ids(settings: Any, value: dict[str, Any]) -> list[str]:
    settings.DJANGO_REDIS_METRICS = value
    return [message.id for message in check_settings()]


def test_good_settings_pass(settings: Any) -> None:
    good = {
        "ANNOTATION_TOKEN": TOKEN,
        "EXPORT_TOKEN": TOKEN.replace("a-", "b-"),
        "ANNOTATION_MAX_COUNT": 100_000,
        "ANNOTATION_MAX_LENGTH": 10_000,
        "ANNOTATION_RETENTION": 60,
    }
    assert ids(settings, good) == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"ANNOTATION_TOKEN": "short"}, "E060"),
        ({"ANNOTATION_TOKEN": 1234567890123456789}, "E060"),
        ({"ANNOTATION_MAX_COUNT": 0}, "E061"),
        ({"ANNOTATION_MAX_COUNT": 100_001}, "E061"),
        ({"ANNOTATION_MAX_COUNT": True}, "E061"),
        ({"ANNOTATION_MAX_LENGTH": 10_001}, "E062"),
        ({"ANNOTATION_MAX_LENGTH": "500"}, "E062"),
        ({"ANNOTATION_RETENTION": 59}, "E063"),
        ({"ANNOTATION_RETENTION": 101 * 366 * 86400}, "E063"),
        ({"ANNOTATION_TOKEN": TOKEN, "EXPORT_TOKEN": TOKEN}, "E064"),
    ],
)
def test_bad_values_have_their_own_check(
    settings: Any, value: dict[str, Any], expected: str
) -> None:
    assert ids(settings, value) == [f"django_redis_metrics.{expected}"]
