"""Calendar periods (hour, day, ISO week, month) in the configured time zone, bitmapist-style.

A period is identified by its start, an aware datetime in the period's time zone. Arithmetic goes
through epoch seconds (``prev`` is the period holding ``start - 1s``, ``next`` the one holding
``end``), so days of 23 or 25 hours around DST changes and hours that occur twice in the autumn
are handled by ``zoneinfo`` rather than by adding fixed durations. Key suffixes carry the year:
``2026-11-21``, ``2020-W53`` (ISO year and week), ``2026-11`` and ``2026-10-25T02+0100`` (an
hour carries its UTC offset so the repeated autumn hour gets its own key).
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta, tzinfo
from functools import cached_property
from typing import ClassVar

from ..conf import conf
from .timeutil import When, to_timestamp
from .validation import integer, shown

PERIOD_NAMES = ("hour", "day", "week", "month")
#: The days a period may be named by: the years 2 to 9998, as ``when`` (``timeutil``), so that
#: a period and its neighbours exist in any zone.
EARLIEST_DAY = date(2, 1, 1)
LATEST_DAY = date(9998, 12, 31)


def calendar_int(value: object, what: str, low: int, high: int) -> int:
    """An int (not a bool, not a ``Decimal``) from ``low`` to ``high``: a year, month, week."""
    number = integer(value, what)
    if not low <= number <= high:
        raise ValueError(f"{what} must be from {low} to {high}, not {shown(number)}.")
    return number


def checked_day(day: object, what: str = "day") -> date:
    """``day`` if it is a ``date`` (not a datetime) of the years 2 to 9998."""
    if not isinstance(day, date) or isinstance(day, datetime):
        raise TypeError(f"{what} must be a date, not {type(day).__name__}: {shown(day)}.")
    if not EARLIEST_DAY <= day <= LATEST_DAY:
        raise ValueError(f"{what} must fall within the years 2 to 9998, not {day}.")
    return day


#: Hours shifted one by one (exact in every zone) before ``Hour.shift`` jumps instead.
LONG_WALK = 24 * 7


def get_zone(tz: tzinfo | str | None = None) -> tzinfo:
    """``tz`` as a tzinfo; ``None`` means the configured ``TIME_ZONE`` (read now)."""
    if tz is None:
        tz = conf.TIME_ZONE
    if isinstance(tz, str):
        try:
            return zoneinfo.ZoneInfo(tz)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"Unknown time zone {tz!r}.") from exc
    return tz


def _midnight(day: date, tz: tzinfo) -> datetime:
    """The first instant of ``day`` in ``tz`` (later than 00:00 where midnight is skipped)."""
    start = datetime.combine(day, time(0), tzinfo=tz)
    # A skipped midnight (a DST jump at 00:00, e.g. America/Santiago) needs nothing: Python reads
    # the missing 00:00 (fold=0) with the offset before the jump, so its timestamp is already the
    # day's first instant (01:00 after the jump); the datetime keeps the 00:00 wall time, and
    # keys use the date only. The round trip leaves the day only for a date the zone skips
    # entirely (Pacific/Apia 2011-12-30, which has no instant): it is then the next day.
    roundtrip = datetime.fromtimestamp(start.timestamp(), tz)
    if roundtrip.date() != day:
        start = roundtrip
    return start


class Period:
    """One calendar period; subclasses define how a period is found from an instant.

    Immutable: ``end`` and the epoch values are computed once.
    """

    name: ClassVar[str]

    def __init__(self, start: datetime) -> None:
        self.start = start

    @classmethod
    def containing(cls, when: When = None, tz: tzinfo | str | None = None) -> Period:
        """The period holding ``when`` (an aware datetime or epoch seconds; ``None`` = now)."""
        zone = get_zone(tz)
        return cls(cls._start_of(datetime.fromtimestamp(to_timestamp(when), zone)))

    @classmethod
    def _start_of(cls, local: datetime) -> datetime:
        raise NotImplementedError

    @property
    def tz(self) -> tzinfo:
        assert self.start.tzinfo is not None
        return self.start.tzinfo

    @cached_property
    def end(self) -> datetime:
        """The first instant after the period (the next period's start)."""
        raise NotImplementedError

    @cached_property
    def start_ts(self) -> float:
        return self.start.timestamp()

    @cached_property
    def end_ts(self) -> float:
        return self.end.timestamp()

    @property
    def next(self) -> Period:
        return type(self).containing(self.end_ts, self.tz)

    @property
    def prev(self) -> Period:
        return type(self).containing(self.start_ts - 1, self.tz)

    def shift(self, steps: int) -> Period:
        """The period ``steps`` periods later (earlier when negative); subclasses jump by
        calendar arithmetic (``OverflowError``/``ValueError`` past the year 9999)."""
        period: Period = self
        for _ in range(abs(steps)):
            period = period.next if steps > 0 else period.prev
        return period

    @property
    def suffix(self) -> str:
        """The key segment naming this period; carries the (ISO) year."""
        raise NotImplementedError

    @property
    def key_part(self) -> str:
        return f"{self.name}:{self.suffix}"

    def is_over(self, now: When = None) -> bool:
        """Whether the period has ended (so data for it should no longer change)."""
        return self.end_ts <= to_timestamp(now, "now")

    def days(self) -> list[Day]:
        """The days this period covers (those it touches, for an hour)."""
        days: list[Day] = []
        day: Period = Day.containing(self.start_ts, self.tz)
        while day.start_ts < self.end_ts:
            assert isinstance(day, Day)
            days.append(day)
            day = day.next
        return days

    def __contains__(self, when: When) -> bool:
        return self.start_ts <= to_timestamp(when) < self.end_ts

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and isinstance(other, Period)
            and other.start_ts == self.start_ts
            and str(other.tz) == str(self.tz)
        )

    def __hash__(self) -> int:
        return hash((self.name, self.start_ts, str(self.tz)))

    def __lt__(self, other: Period) -> bool:
        return (self.start_ts, self.end_ts) < (other.start_ts, other.end_ts)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.suffix} {self.tz}>"

    def __str__(self) -> str:
        return self.suffix


def _wall_hour(ts: float, tz: tzinfo) -> tuple[date, int, timedelta | None]:
    """What names the hour holding ``ts``: local date, local hour and UTC offset."""
    local = datetime.fromtimestamp(ts, tz)
    return local.date(), local.hour, local.utcoffset()


def _first_change(lo: float, hi: float, tz: tzinfo) -> float:
    """The first whole second in ``(lo, hi]`` whose wall hour differs from ``lo``'s (``hi``'s
    does); a bisection, used only when a UTC offset change falls inside an hour."""
    key = _wall_hour(lo, tz)
    low, high = int(lo), int(hi)
    while high - low > 1:
        mid = (low + high) // 2
        if _wall_hour(mid, tz) == key:
            low = mid
        else:
            high = mid
    return float(high)


class Hour(Period):
    """A wall-clock hour: the instants sharing local date, hour and UTC offset.

    The repeated autumn hour is two periods (told apart by UTC offset), and where an offset change
    is not a whole hour (Australia/Lord_Howe's 30-minute DST) an hour may be 30 or 90 minutes
    long: it then starts or ends at the change, and a start that is not at :00 shows its minute
    in the key (``2023-04-02T0130+1030``).
    """

    name = "hour"

    @classmethod
    def _start_of(cls, local: datetime) -> datetime:
        tz = local.tzinfo
        assert tz is not None
        ts = local.timestamp()
        key = _wall_hour(ts, tz)
        # Back to :00 of the same wall hour; if the offset changed on the way, the hour began
        # at the change.
        candidate = ts - (local.minute * 60 + local.second + local.microsecond / 1e6)
        if _wall_hour(candidate, tz) != key:
            candidate = _first_change(candidate, ts, tz)
        return datetime.fromtimestamp(candidate, tz)

    @cached_property
    def end(self) -> datetime:
        """The start of the next wall-clock hour (an offset change may come first)."""
        key = _wall_hour(self.start_ts, self.tz)
        candidate = self.start_ts + 3600 - (self.start.minute * 60 + self.start.second)
        if _wall_hour(candidate - 1, self.tz) != key:
            # An offset change inside the hour: the next hour starts at the change.
            candidate = _first_change(self.start_ts, candidate - 1, self.tz)
        return datetime.fromtimestamp(candidate, self.tz)

    def shift(self, steps: int) -> Period:
        """Near shifts walk hour by hour; far ones jump by 3600 s per hour, exact wherever UTC
        offsets change by whole hours."""
        if abs(steps) <= LONG_WALK:
            return super().shift(steps)
        return type(self).containing(self.start_ts + 3600 * steps, self.tz)

    @cached_property
    def suffix(self) -> str:
        if self.start.minute or self.start.second:
            return self.start.strftime("%Y-%m-%dT%H%M%z")
        return self.start.strftime("%Y-%m-%dT%H%z")


class Day(Period):
    """A calendar day in the period's time zone (23 or 25 hours long across DST changes)."""

    name = "day"

    @classmethod
    def of(cls, day: date, tz: tzinfo | str | None = None) -> Day:
        return cls(_midnight(checked_day(day), get_zone(tz)))

    @classmethod
    def _start_of(cls, local: datetime) -> datetime:
        return _midnight(local.date(), local.tzinfo or get_zone())

    @property
    def date(self) -> date:
        return self.start.date()

    @cached_property
    def end(self) -> datetime:
        return _midnight(self.date + timedelta(days=1), self.tz)

    def shift(self, steps: int) -> Period:
        return type(self)(_midnight(self.date + timedelta(days=steps), self.tz))

    @cached_property
    def suffix(self) -> str:
        return self.date.isoformat()


class Week(Period):
    """An ISO week (Monday to Sunday), keyed by ISO year and week number: ``2020-W53``."""

    name = "week"

    @classmethod
    def of(cls, iso_year: int, week: int, tz: tzinfo | str | None = None) -> Week:
        iso_year = calendar_int(iso_year, "iso_year", EARLIEST_DAY.year, LATEST_DAY.year)
        week = calendar_int(week, "week", 1, 53)
        try:
            monday = date.fromisocalendar(iso_year, week, 1)
        except ValueError as exc:
            raise ValueError(f"{iso_year} has no ISO week {week}.") from exc
        return cls(_midnight(monday, get_zone(tz)))

    @classmethod
    def _start_of(cls, local: datetime) -> datetime:
        day = local.date()
        return _midnight(day - timedelta(days=day.weekday()), local.tzinfo or get_zone())

    @cached_property
    def end(self) -> datetime:
        return _midnight(self.start.date() + timedelta(days=7), self.tz)

    def shift(self, steps: int) -> Period:
        return type(self)(_midnight(self.start.date() + timedelta(days=7 * steps), self.tz))

    @property
    def iso(self) -> tuple[int, int]:
        iso = self.start.date().isocalendar()
        return iso.year, iso.week

    @cached_property
    def suffix(self) -> str:
        year, week = self.iso
        return f"{year:04d}-W{week:02d}"


class Month(Period):
    """A calendar month: ``2026-11``."""

    name = "month"

    @classmethod
    def of(cls, year: int, month: int, tz: tzinfo | str | None = None) -> Month:
        year = calendar_int(year, "year", EARLIEST_DAY.year, LATEST_DAY.year)
        month = calendar_int(month, "month", 1, 12)
        return cls(_midnight(date(year, month, 1), get_zone(tz)))

    @classmethod
    def _start_of(cls, local: datetime) -> datetime:
        return _midnight(local.date().replace(day=1), local.tzinfo or get_zone())

    @cached_property
    def end(self) -> datetime:
        first = self.start.date()
        following = date(first.year + first.month // 12, first.month % 12 + 1, 1)
        return _midnight(following, self.tz)

    def shift(self, steps: int) -> Period:
        first = self.start.date()
        index = first.year * 12 + first.month - 1 + steps
        return type(self)(_midnight(date(index // 12, index % 12 + 1, 1), self.tz))

    @cached_property
    def suffix(self) -> str:
        return self.start.strftime("%Y-%m")


PERIOD_CLASSES: dict[str, type[Period]] = {"hour": Hour, "day": Day, "week": Week, "month": Month}


def period_class(name: object) -> type[Period]:
    """The period class called ``name``; a clear error for anything else."""
    if not isinstance(name, str):
        raise TypeError(f"A period is one of {', '.join(PERIOD_NAMES)}, not {name!r}.")
    try:
        return PERIOD_CLASSES[name]
    except KeyError:
        known = ", ".join(PERIOD_NAMES)
        raise ValueError(f"Unknown period {name!r}; use one of {known}.") from None


def day_of(when: When | date, tz: tzinfo | str | None = None) -> Day:
    """The day holding ``when``; a ``date`` names its day in the zone directly."""
    if isinstance(when, date) and not isinstance(when, datetime):
        return Day.of(checked_day(when, "a date"), tz)
    day = Day.containing(when, tz)
    assert isinstance(day, Day)
    return day


def days_between(
    start: When | date, end: When | date, tz: tzinfo | str | None = None
) -> Iterator[Day]:
    """Every day from ``start``'s day to ``end``'s day, inclusive (dates are accepted too)."""
    zone = get_zone(tz)
    first = day_of(start, zone)
    last = day_of(end, zone)
    if last < first:
        raise ValueError("end must not be before start.")
    day: Period = first
    while day.start_ts <= last.start_ts:
        assert isinstance(day, Day)
        yield day
        day = day.next
