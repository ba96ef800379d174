"""``manage.py check_alerts`` and each ``clean_metrics`` pass evaluate the declared alerts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from django_redis_metrics import Alert, Counter
from django_redis_metrics.alerts import forget, register


@pytest.fixture
def spike(single: Any) -> Iterator[Alert]:
    forget()
    hits = Counter("hits", precisions=[60], samples=10)
    hits.incr(20, when=time.time() - 1)
    yield register(Alert("spike", hits, above=10, over=120))
    forget()


def run(command: str, *args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(command, *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_check_alerts_runs_one_pass(spike: Alert) -> None:
    out, _ = run("check_alerts")
    assert out == "alerts: 1 evaluated, 1 changed (spike: normal -> firing)\n"
    out, _ = run("check_alerts")
    assert out == "alerts: 1 evaluated, 0 changed\n"


@pytest.mark.django_db(transaction=True)  # clean_metrics archives
def test_each_clean_metrics_pass_evaluates_the_alerts(spike: Alert) -> None:
    out, _ = run("clean_metrics", "--loop", "--max-passes", "1", "--interval", "1")
    assert "pass 0: alerts: 1 evaluated, 1 changed (spike: normal -> firing)" in out
    out, _ = run("clean_metrics", "--dry-run")
    assert "alerts:" not in out  # a dry run changes nothing, alerts included


def test_check_alerts_says_when_redis_cannot_be_reached(
    spike: Alert, metrics_settings: Any
) -> None:
    metrics_settings(CONNECTION="redis://127.0.0.1:1/0", SOCKET_TIMEOUT=0.5)
    with pytest.raises(CommandError, match="Cannot check alerts: Redis at"):
        run("check_alerts")
