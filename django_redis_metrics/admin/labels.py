"""Every date and rate the admin shows, in one time zone: the site's (``TIME_ZONE`` of the app,
else Django's), whatever the browser's zone is.

Instants are labelled ``2026-11-23 14:05`` (with seconds under a minute's precision), calendar
periods as what they are (``2026-11-23``, ``2026-W48``, ``Nov 2026``, ``2026-11-23 14:00``), all
through Django's ``dateformat``. Counter slices stay epoch-aligned (the design's decision), so a
slice of whole days is a UTC day: it is labelled ``2026-11-23 UTC`` and its chart runs in UTC,
saying so, rather than pretending to be the site's day.
"""

from __future__ import annotations

from datetime import UTC, datetime, tzinfo

from django.utils import dateformat

from ..core.periods import Period, get_zone

DAY = 86400
#: Django ``dateformat`` strings of instants, by the precision they are shown at.
SECOND_FORMAT = "Y-m-d H:i:s"
MINUTE_FORMAT = "Y-m-d H:i"
UTC_DAY_FORMAT = "Y-m-d \\U\\T\\C"
#: Django ``dateformat`` strings of calendar periods (a week is its ISO year and number).
PERIOD_FORMATS = {"hour": "Y-m-d H:00", "day": "Y-m-d", "month": "M Y"}

#: ``seconds -> words`` for the rates people say out loud; anything else is "per N units".
RATE_WORDS = {1: "second", 60: "minute", 3600: "hour", DAY: "day"}


def site_zone() -> tzinfo:
    """The site's zone: ``DJANGO_REDIS_METRICS["TIME_ZONE"]``, else Django's ``TIME_ZONE``."""
    return get_zone()


def zone_name(zone: tzinfo | None = None) -> str:
    return str(zone if zone is not None else site_zone())


def offset_label(when: float, zone: tzinfo | None = None) -> str:
    """``"UTC+01:00"``: the zone's UTC offset at ``when`` (it changes with DST)."""
    local = datetime.fromtimestamp(when, zone or site_zone())
    offset = dateformat.format(local, "O")  # "+0100"
    return f"UTC{offset[:3]}:{offset[3:]}"


def zone_label(when: float, zone: tzinfo | None = None) -> str:
    """``"Europe/Paris (UTC+01:00)"``: what every chart says its times are in."""
    zone = zone or site_zone()
    name = zone_name(zone)
    return name if name == "UTC" else f"{name} ({offset_label(when, zone)})"


def is_utc_days(step: int) -> bool:
    """Whether slices of ``step`` seconds are whole UTC days (epoch-aligned day slices)."""
    return step >= DAY and step % DAY == 0


def chart_zone(step: int | None) -> tzinfo:
    """The zone a chart of ``step``-second slices is drawn in: UTC for whole days, else the
    site's."""
    return UTC if step is not None and is_utc_days(step) else site_zone()


def instant_label(when: float, step: int = 60, zone: tzinfo | None = None) -> str:
    """The label of the slice of ``step`` seconds starting at ``when``."""
    if is_utc_days(step):
        return dateformat.format(datetime.fromtimestamp(when, UTC), UTC_DAY_FORMAT)
    fmt = SECOND_FORMAT if step < 60 else MINUTE_FORMAT
    return dateformat.format(datetime.fromtimestamp(when, zone or site_zone()), fmt)


def iso_instant(when: float, zone: tzinfo | None = None) -> str:
    """ISO 8601 with the zone's UTC offset (``2026-11-23T14:05:00+01:00``), for exports."""
    return datetime.fromtimestamp(when, zone or site_zone()).isoformat()


def period_label(period: Period) -> str:
    """``2026-11-23``, ``2026-W48``, ``Nov 2026`` or ``2026-11-23 14:00``."""
    if period.name == "week":
        return period.suffix
    return dateformat.format(period.start, PERIOD_FORMATS[period.name])


def rate(seconds: int) -> str:
    """``60`` -> ``"per minute"``, ``300`` -> ``"per 5 minutes"``, ``86400`` -> ``"per day
    (UTC)"`` for counters' epoch-aligned day slices (see the module's docstring)."""
    for size, word in sorted(RATE_WORDS.items(), reverse=True):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            text = f"per {word}" if count == 1 else f"per {count} {word}s"
            return f"{text} (UTC)" if size == DAY else text
    return f"per {seconds} seconds"


def caption(name: str, seconds: int) -> str:
    """``"signups per minute"``: a chart's caption names its metric."""
    return f"{name} {rate(seconds)}"
