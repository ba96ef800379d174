"""Print the time zone (``Etc/GMT±N``) where the current day began less than an hour ago.

The suite's clock-reading tests must hold at any instant; the hour after midnight is where a
time built as "today's start plus an hour" lies ahead of the present. Run the suite there:

    DRM_TEST_TIME_ZONE=$(python scripts/midnight_zone.py) .venv/bin/python -m pytest

``--before`` names the zone where the day ends within the hour instead (23:00 to 24:00).
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime


def zone_at_local_hour(hour: int, now: datetime) -> str:
    """The ``Etc/GMT`` zone whose local time is in ``hour`` at ``now`` (UTC offsets -12..+14
    cover every hour of the day; POSIX names them with the sign reversed)."""
    for offset in range(-12, 15):
        if (now.hour + offset) % 24 == hour:
            return "Etc/GMT" if offset == 0 else f"Etc/GMT{-offset:+d}"
    raise AssertionError("unreachable: 27 offsets cover 24 hours")


if __name__ == "__main__":
    before = "--before" in sys.argv[1:]
    print(zone_at_local_hour(23 if before else 0, datetime.now(UTC)))
