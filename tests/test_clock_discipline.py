"""Tests hold at any hour: times built from a period go through ``tests.clock.moment``."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from django_redis_metrics.core.periods import Day, Week

from .clock import moment

TESTS = Path(__file__).resolve().parent
#: "<period>.start_ts + <a number>": ahead of the present when the period is the current one.
OFFSET_FROM_A_START = re.compile(r"\.start_ts\s*\+\s*\d")
#: Where period arithmetic is the subject itself (no write, no read of Redis).
EXEMPT = {"core/test_periods.py", "clock.py", "test_clock_discipline.py"}


def test_no_test_offsets_a_period_start_by_hand() -> None:
    found = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        if str(path.relative_to(TESTS)) not in EXEMPT
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if OFFSET_FROM_A_START.search(line)
    ]
    assert found == [], "use tests.clock.moment(period, offset, now=now):\n" + "\n".join(found)


def test_a_moment_of_the_current_period_is_never_ahead_of_now() -> None:
    now = time.time()
    today = Day.containing(now, "UTC")
    just_after_midnight = today.start_ts + 60
    assert moment(today, 3600, now=just_after_midnight) == just_after_midnight
    assert moment(today, 30, now=just_after_midnight) == today.start_ts + 30
    yesterday = today.prev
    assert moment(yesterday, 3600, now=now) == yesterday.start_ts + 3600


def test_a_moment_of_a_period_to_come_or_past_its_end_is_refused() -> None:
    now = time.time()
    this_week = Week.containing(now, "UTC")
    with pytest.raises(ValueError, match="begins after now"):
        moment(this_week.next, 10, now=now)
    with pytest.raises(ValueError, match="outside"):
        moment(this_week.prev, 8 * 86400, now=now)
    with pytest.raises(ValueError, match="outside"):
        moment(this_week.prev, -1, now=now)
