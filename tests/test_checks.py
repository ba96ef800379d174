"""System checks: the exact ids for each kind of bad setting."""

from __future__ import annotations

import pytest

from django_redis_metrics.checks import check_settings


def ids(settings, value):
    settings.DJANGO_REDIS_METRICS = value
    return [message.id for message in check_settings()]


def test_defaults_and_good_settings_pass(settings):
    assert ids(settings, {}) == []
    assert (
        ids(
            settings,
            {
                "CONNECTION": "unix:///run/redis.sock?db=2",
                "PREFIX": "site:metrics",
                "TIME_ZONE": "Europe/Paris",
                "COUNTER_PRECISIONS": [60, 3600],
            },
        )
        == []
    )
    del settings.DJANGO_REDIS_METRICS
    assert [m.id for m in check_settings()] == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (["not", "a", "dict"], ["django_redis_metrics.E001"]),
        ({"CONECTION": "redis://x"}, ["django_redis_metrics.W001"]),
        ({"CONNECTION": 6379}, ["django_redis_metrics.E002"]),
        ({"CONNECTION": "http://localhost"}, ["django_redis_metrics.E002"]),
        ({"CONNECTION": "missing-alias"}, ["django_redis_metrics.E003"]),
        ({"CONNECTION": "default"}, ["django_redis_metrics.E003"]),  # a locmem cache
        ({"PREFIX": ""}, ["django_redis_metrics.E004"]),
        ({"PREFIX": "a{b}"}, ["django_redis_metrics.E004"]),
        ({"PREFIX": "metrics:"}, ["django_redis_metrics.E004"]),
        ({"CLUSTER": "yes"}, ["django_redis_metrics.E005"]),
        ({"CLUSTER": True, "CONNECTION": "unix:///tmp/r.sock"}, ["django_redis_metrics.E005"]),
        ({"TIME_ZONE": "Mars/Olympus"}, ["django_redis_metrics.E006"]),
        ({"SOCKET_TIMEOUT": 0}, ["django_redis_metrics.E007"]),
        ({"SOCKET_CONNECT_TIMEOUT": "2"}, ["django_redis_metrics.E007"]),
        ({"COUNTER_PRECISIONS": [0, 60]}, ["django_redis_metrics.E008"]),
        ({"COUNTER_PRECISIONS": "60"}, ["django_redis_metrics.E008"]),
        ({"COUNTER_SAMPLES": -1}, ["django_redis_metrics.E009"]),
        ({"EVENT_MAX_VALUES": 0}, ["django_redis_metrics.E021"]),
        ({"EVENT_MAX_VALUES": "1000"}, ["django_redis_metrics.E021"]),
        # Upper bounds: each limit that protects Redis (see docs/settings.md).
        ({"COUNTER_PRECISIONS": [60, 2**63]}, ["django_redis_metrics.E008"]),
        ({"COUNTER_SAMPLES": 2**63}, ["django_redis_metrics.E009"]),
        ({"STATISTIC_PRECISIONS": [0, 60]}, ["django_redis_metrics.E010"]),
        ({"STATISTIC_PRECISIONS": None}, ["django_redis_metrics.E010"]),
        ({"STATISTIC_SAMPLES": 0}, ["django_redis_metrics.E011"]),
        ({"STATISTIC_SAMPLES": "120"}, ["django_redis_metrics.E011"]),
        ({"EVENT_RETENTION": 10**400}, ["django_redis_metrics.E020"]),
        ({"EVENT_RETENTION": 101 * 366 * 86400}, ["django_redis_metrics.E020"]),
        ({"EVENT_MAX_VALUES": 10**6}, ["django_redis_metrics.E021"]),
        ({"BITMAP_RETENTION": {"day": 10**6}}, ["django_redis_metrics.E030"]),
        ({"MAX_USER_ID": 2**32}, ["django_redis_metrics.E032"]),
        ({"MAX_USER_ID": -1}, ["django_redis_metrics.E032"]),
        ({"MAX_USER_ID": True}, ["django_redis_metrics.E032"]),
        ({"MAX_VIEW_COUNTERS": 10**6}, ["django_redis_metrics.E042"]),
        ({"ESTIMATE_RETENTION": {"day": 0}}, ["django_redis_metrics.E070"]),
        ({"ESTIMATE_RETENTION": {"year": 3}}, ["django_redis_metrics.E070"]),
        ({"ESTIMATE_RETENTION": [("day", 3)]}, ["django_redis_metrics.E070"]),
        ({"ARCHIVE_DATABASE": "archive"}, ["django_redis_metrics.E090"]),
        ({"ARCHIVE_DATABASE": 1}, ["django_redis_metrics.E090"]),
        ({"ARCHIVE_PRECISIONS": (3600, 0)}, ["django_redis_metrics.E091"]),
        ({"ARCHIVE_PRECISIONS": "3600"}, ["django_redis_metrics.E091"]),
        ({"ARCHIVE_BATCH": 0}, ["django_redis_metrics.E092"]),
        ({"ARCHIVE_BATCH": 10_001}, ["django_redis_metrics.E092"]),
        # The sender's keys, in SENDER or (moved, with a warning) flat.
        ({"SENDER": [("DELAY", 1)]}, ["django_redis_metrics.E049"]),
        ({"SENDER": {"DELAYS": 1}}, ["django_redis_metrics.W001"]),
        ({"SENDER": {"TIMEOUT": 0}}, ["django_redis_metrics.E044"]),
        ({"SENDER": {"DELAY": -1}}, ["django_redis_metrics.E045"]),
        ({"SENDER": {"QUEUE_SIZE": "9"}}, ["django_redis_metrics.E046"]),
        ({"SENDER": {"QUEUE_BYTES": 0}}, ["django_redis_metrics.E047"]),
        ({"SENDER": {"RETRY_DELAY": 2, "RETRY_MAX_DELAY": 1}}, ["django_redis_metrics.E048"]),
        ({"SEND_DELAY": 0.1}, ["django_redis_metrics.W002"]),
        ({"SEND_DELAY": -1}, ["django_redis_metrics.W002", "django_redis_metrics.E045"]),
        ({"SEND_DELAY": -1, "SENDER": {"DELAY": 0.1}}, ["django_redis_metrics.W002"]),
        ({"FAIL_OPEN_COOLDOWN": 5}, ["django_redis_metrics.W001"]),
    ],
)
def test_each_bad_setting_has_its_id(settings, value, expected):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    assert ids(settings, value) == expected


def test_checks_are_registered(settings):
    from django.core.checks import run_checks

    settings.DJANGO_REDIS_METRICS = {"PREFIX": "{bad}"}
    assert "django_redis_metrics.E004" in [m.id for m in run_checks()]


def test_each_setting_names_a_validator_and_a_check_id():
    from django.utils.module_loading import import_string

    from django_redis_metrics.conf import Settings
    from django_redis_metrics.sender_settings import SENDER_KEYS

    for setting in Settings.table():
        assert setting.check is not None and setting.validator is not None, setting.name
        assert callable(import_string(setting.validator))
        import_string(setting.validator)(setting.default)  # every default is valid
    for key in SENDER_KEYS:
        import_string(key.validator)(key.default)


def test_the_flat_sender_keys_are_read_when_sender_does_not_set_them(settings):
    from django_redis_metrics.conf import conf

    assert (conf.SENDER.delay, conf.SENDER.timeout, conf.SENDER.queue_size) == (0.05, 0.25, 50_000)
    settings.DJANGO_REDIS_METRICS = {"SEND_DELAY": 1.5, "FAIL_OPEN_TIMEOUT": 0.5}
    assert (conf.SENDER.delay, conf.SENDER.timeout) == (1.5, 0.5)
    settings.DJANGO_REDIS_METRICS = {"SEND_DELAY": 1.5, "SENDER": {"DELAY": 2, "QUEUE_SIZE": 7}}
    assert (conf.SENDER.delay, conf.SENDER.timeout, conf.SENDER.queue_size) == (2.0, 0.25, 7)
    assert conf.snapshot().SENDER.delay == 2.0


def test_a_flat_sender_key_is_named_in_its_warning(settings):
    settings.DJANGO_REDIS_METRICS = {"SEND_RETRY_MAX_DELAY": 1.0}
    (message,) = check_settings()
    assert "['SENDER']['RETRY_MAX_DELAY']" in message.msg
    assert message.id == "django_redis_metrics.W002"
