"""Calendar periods: boundaries, keys, prev/next across year ends, ISO week 53 and DST."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from django_redis_metrics.core.periods import (
    Day,
    Hour,
    Month,
    Week,
    days_between,
    get_zone,
    period_class,
)

PARIS = ZoneInfo("Europe/Paris")
NEW_YORK = ZoneInfo("America/New_York")


def at(*args: int, tz: ZoneInfo = PARIS) -> float:
    return datetime(*args, tzinfo=tz).timestamp()


def test_day_in_paris_starts_at_local_midnight():
    day = Day.containing(at(2026, 3, 29, 12), PARIS)
    assert day.suffix == "2026-03-29"
    assert day.start == datetime(2026, 3, 29, tzinfo=PARIS)
    # Spring forward: 23 hours; autumn: 25 hours.
    assert day.end_ts - day.start_ts == 23 * 3600
    autumn = Day.of(date(2026, 10, 25), PARIS)
    assert autumn.end_ts - autumn.start_ts == 25 * 3600
    assert autumn.next.suffix == "2026-10-26"
    assert autumn.next.prev == autumn


def test_instant_near_midnight_belongs_to_the_local_day():
    # 23:30 UTC on Dec 31 is already Jan 1 in Paris, and still Dec 31 in New York.
    instant = datetime(2025, 12, 31, 23, 30, tzinfo=UTC)
    assert Day.containing(instant, PARIS).suffix == "2026-01-01"
    assert Day.containing(instant, NEW_YORK).suffix == "2025-12-31"
    assert Month.containing(instant, PARIS).suffix == "2026-01"
    assert Month.containing(instant, NEW_YORK).suffix == "2025-12"


def test_iso_weeks_carry_the_iso_year():
    # 2020 has 53 ISO weeks; Jan 1-3 2021 still belong to 2020-W53.
    week = Week.containing(at(2021, 1, 2, 10), PARIS)
    assert week.suffix == "2020-W53"
    assert week.start == datetime(2020, 12, 28, tzinfo=PARIS)
    assert week.next.suffix == "2021-W01"
    assert week.prev.suffix == "2020-W52"
    # 2026 has 53 weeks as well; Dec 29 2025 is already 2026-W01.
    assert Week.containing(at(2025, 12, 29, 1), PARIS).suffix == "2026-W01"
    assert Week.of(2026, 53, PARIS).start.date() == date(2026, 12, 28)
    assert Week.of(2026, 53, PARIS).next.suffix == "2027-W01"
    with pytest.raises(ValueError, match="no ISO week 53"):
        Week.of(2025, 53)


def test_week_across_dst_is_167_hours():
    week = Week.containing(at(2026, 3, 26, 12), PARIS)
    assert week.end_ts - week.start_ts == 167 * 3600
    assert len(week.days()) == 7


def test_month_boundaries_and_year_end():
    december = Month.of(2026, 12, NEW_YORK)
    assert december.next.suffix == "2027-01"
    assert december.prev.suffix == "2026-11"
    assert december.end == datetime(2027, 1, 1, tzinfo=NEW_YORK)
    assert len(december.days()) == 31
    assert [d.suffix for d in Month.of(2028, 2, PARIS).days()][-1] == "2028-02-29"
    with pytest.raises(ValueError):
        Month.of(2026, 13)


def test_repeated_autumn_hour_is_two_periods():
    # Paris 2026-10-25: 02:00-03:00 happens twice (CEST then CET).
    first = Hour.containing(datetime(2026, 10, 25, 0, 30, tzinfo=UTC), PARIS)
    second = first.next
    assert first.suffix == "2026-10-25T02+0200"
    assert second.suffix == "2026-10-25T02+0100"
    assert second.start_ts - first.start_ts == 3600
    assert second.prev == first
    # Spring forward: 02:00 does not exist, 01:00 is followed by 03:00.
    before = Hour.containing(at(2026, 3, 29, 1, 30), PARIS)
    assert before.next.suffix == "2026-03-29T03+0200"


def test_hours_of_a_half_hour_zone_start_at_local_hours():
    kolkata = ZoneInfo("Asia/Kolkata")
    hour = Hour.containing(datetime(2026, 1, 1, 0, 0, tzinfo=UTC), kolkata)
    assert hour.start.minute == 0 and hour.start.hour == 5
    assert hour.suffix == "2026-01-01T05+0530"


@pytest.mark.parametrize("cls", [Hour, Day, Week, Month])
@pytest.mark.parametrize("tz", [PARIS, NEW_YORK, ZoneInfo("UTC")])
def test_random_instants_fall_in_their_period_and_neighbours_tile(cls, tz):
    rng = random.Random(f"{cls.name}{tz}")
    start = datetime(2019, 12, 1, tzinfo=UTC).timestamp()
    for _ in range(200):
        ts = start + rng.uniform(0, 3 * 365 * 86400)
        period = cls.containing(ts, tz)
        assert period.start_ts <= ts < period.end_ts
        assert ts in period
        assert period.next.start_ts == period.end_ts
        assert period.prev.end_ts == period.start_ts
        assert period.next.prev == period
        assert period.shift(3).shift(-3) == period
        local = datetime.fromtimestamp(ts, tz)
        if cls is Day:
            assert period.suffix == local.date().isoformat()
        elif cls is Week:
            iso = local.date().isocalendar()
            assert period.suffix == f"{iso.year}-W{iso.week:02d}"
        elif cls is Month:
            assert period.suffix == f"{local.year}-{local.month:02d}"


def test_days_between_is_inclusive_in_the_zone():
    days = list(days_between(at(2026, 10, 24, 23), at(2026, 10, 26, 0, 30), PARIS))
    assert [d.suffix for d in days] == ["2026-10-24", "2026-10-25", "2026-10-26"]
    with pytest.raises(ValueError, match="before"):
        list(days_between(at(2026, 1, 2), at(2026, 1, 1), PARIS))


def test_configured_time_zone_is_read_on_every_access(settings):
    instant = datetime(2026, 6, 30, 23, 30, tzinfo=UTC)
    settings.DJANGO_REDIS_METRICS = {"TIME_ZONE": "Europe/Paris"}
    assert Day.containing(instant).suffix == "2026-07-01"
    settings.DJANGO_REDIS_METRICS = {"TIME_ZONE": "America/New_York"}
    assert Day.containing(instant).suffix == "2026-06-30"
    with pytest.raises(ValueError, match="Unknown time zone"):
        get_zone("Mars/Olympus")


def test_period_names_are_checked():
    assert period_class("week") is Week
    with pytest.raises(ValueError, match="Unknown period 'year'"):
        period_class("year")
    with pytest.raises(TypeError):
        period_class(7)


def test_naive_datetimes_are_refused():
    with pytest.raises(ValueError, match="aware"):
        Day.containing(datetime(2026, 1, 1) + timedelta(hours=1))


def test_lord_howe_half_hour_dst_hours_tile_with_distinct_keys():
    # Australia/Lord_Howe moves its clocks by 30 minutes: 02:00 -> 02:30 in October, and
    # 02:00 -> 01:30 in April. Hours must tile time and never share a key.
    zone = "Australia/Lord_Howe"
    for start in (datetime(2023, 9, 30, 20, tzinfo=UTC), datetime(2024, 4, 6, 10, tzinfo=UTC)):
        hour = Hour.containing(start, zone)
        seen: dict[str, float] = {}
        for _ in range(12):
            assert hour.suffix not in seen, hour.suffix
            seen[hour.suffix] = hour.start_ts
            assert hour.end_ts > hour.start_ts
            for offset in (0.0, (hour.end_ts - hour.start_ts) / 2, hour.end_ts - hour.start_ts - 1):
                assert Hour.containing(hour.start_ts + offset, zone) == hour
            following = hour.next
            assert following.start_ts == hour.end_ts and following.prev == hour
            hour = following
    october = Hour.containing(datetime(2023, 9, 30, 15, 45, tzinfo=UTC), zone)  # 02:45 (+11)
    assert october.suffix == "2023-10-01T0230+1100"
    assert october.end_ts - october.start_ts == 1800
    april = Hour.containing(datetime(2024, 4, 6, 15, 10, tzinfo=UTC), zone)  # 01:40 (+10:30)
    assert april.suffix == "2024-04-07T0130+1030"
    assert april.prev.suffix == "2024-04-07T01+1100" and april.next.suffix == "2024-04-07T02+1030"


def test_a_date_the_zone_skips_is_the_next_day():
    # Pacific/Apia skipped 2011-12-30 entirely; days still tile.
    skipped = Day.of(date(2011, 12, 30), "Pacific/Apia")
    before = Day.of(date(2011, 12, 29), "Pacific/Apia")
    assert before.next.start_ts == before.end_ts and before.end_ts <= skipped.start_ts + 1
