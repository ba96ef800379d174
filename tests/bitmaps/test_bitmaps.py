"""UniqueBitmap against Python sets, on the single node and on the Redis Cluster.

The expected sets are computed with ``datetime``/``zoneinfo`` directly (not with the periods
module), from random marks across a year end with ISO week 53 and across a DST change.
"""

from __future__ import annotations

import operator
import random
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime, timedelta
from io import StringIO
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from django.core.management import call_command

from django_redis_metrics import Batch, UniqueBitmap, cleanup, get_redis_connection
from django_redis_metrics.bitmaps import BitmapQuery
from django_redis_metrics.bitmaps import cleaner as bitmap_cleaner
from django_redis_metrics.bitmaps import ids as bitmap_ids
from django_redis_metrics.bitmaps import model as bitmap_model
from django_redis_metrics.bitmaps import query as bitmap_query
from django_redis_metrics.bitmaps.ids import id_cache
from django_redis_metrics.bitmaps.retention import MAX_KEEP
from django_redis_metrics.checks import check_settings
from django_redis_metrics.core.keys import catalogue_key
from django_redis_metrics.core.periods import Day, Month, Week, get_zone
from django_redis_metrics.core.scripts import LuaScript

from ..clock import moment
from ..roundtrips import Rounds, RoundTrips, nodes_of

ZONE = "Europe/Paris"
PARIS = ZoneInfo(ZONE)
# Two windows: the 2020/2021 year end (ISO week 2020-W53 spans it), and the end of CEST in 2026.
WINDOWS = [
    (datetime(2020, 12, 20, tzinfo=PARIS), datetime(2021, 1, 12, tzinfo=PARIS)),
    (datetime(2026, 10, 18, tzinfo=PARIS), datetime(2026, 11, 4, tzinfo=PARIS)),
]
OPS: dict[str, Callable[[Any, Any], Any]] = {
    "|": operator.or_,
    "&": operator.and_,
    "-": operator.sub,
    "^": operator.xor,
}


@pytest.fixture(autouse=True)
def keep_every_period(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests mark dates years back: marks keep every period here (the cleaner still
    follows BITMAP_RETENTION). Retention at write time: test_bitmaps_retention.py."""
    monkeypatch.setattr(bitmap_model, "retention", lambda: MAX_KEEP)


@pytest.fixture
def paris(backend: Any, settings: Any) -> Any:
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "TIME_ZONE": ZONE}
    return backend


class Truth:
    """The users of every period of one bitmap, as Python sets keyed like the bitmap keys."""

    def __init__(self) -> None:
        self.sets: dict[tuple[str, str], set[object]] = defaultdict(set)

    def mark(self, user: object, ts: float) -> None:
        local = datetime.fromtimestamp(ts, PARIS)
        iso = local.date().isocalendar()
        self.sets["hour", local.strftime("%Y-%m-%dT%H%z")].add(user)
        self.sets["day", local.date().isoformat()].add(user)
        self.sets["week", f"{iso.year}-W{iso.week:02d}"].add(user)
        self.sets["month", f"{local.year}-{local.month:02d}"].add(user)

    def days(self, first: date, last: date) -> set[object]:
        users: set[object] = set()
        day = first
        while day <= last:
            users |= self.sets.get(("day", day.isoformat()), set())
            day += timedelta(days=1)
        return users


def random_instants(rng: random.Random, count: int) -> Iterator[float]:
    for _ in range(count):
        start, end = rng.choice(WINDOWS)
        yield rng.uniform(start.timestamp(), end.timestamp())


def random_user(rng: random.Random, mapped: bool) -> object:
    # One kind of id per PREFIX: mapped ids (offsets 0, 1, 2, ...) or integer ids.
    if mapped:
        return f"user-{rng.randrange(200)}"
    return rng.randrange(100, 400) * rng.choice([1, 1, 1, 1000])


def populate(rng: random.Random, bitmap: UniqueBitmap, marks: int, mapped: bool = False) -> Truth:
    truth = Truth()
    for ts in random_instants(rng, marks):
        user = random_user(rng, mapped)
        bitmap.mark(user, ts)
        truth.mark(user, ts)
    return truth


def random_range(rng: random.Random) -> tuple[date, date]:
    start, end = rng.choice(WINDOWS)
    span = (end - start).days
    first = start.date() + timedelta(days=rng.randrange(span))
    last = first + timedelta(days=rng.randrange(span - (first - start.date()).days + 1))
    return first, last


def noon(day: date) -> float:
    return datetime(day.year, day.month, day.day, 12, tzinfo=PARIS).timestamp()


def backend_keys(backend: Any) -> list[str]:
    """Every key of the test (Backend.keys is a SCAN; a name ruff does not mistake for a dict)."""
    found: list[str] = backend.keys()
    return found


def lasting_keys(backend: Any) -> list[str]:
    """Keys without a TTL (a deleted bitmap leaves only its expiring generation key), but the
    PREFIX's id keys (the kind of ids, the mapping), which belong to no bitmap."""
    return [
        k for k in backend_keys(backend) if backend.client.pttl(k) == -1 and ":bitmapid:" not in k
    ]


def assert_temp_keys_expire(backend: Any) -> None:
    temps = [k for k in backend_keys(backend) if ":tmp:" in k]
    for key in temps:
        assert backend.client.pttl(key) > 0, key


def assert_query_matches(query: BitmapQuery, expected: set[object], rng: random.Random) -> None:
    assert query.count() == len(expected)
    for user in rng.sample(sorted(expected, key=str), min(3, len(expected))):
        assert user in query
    outsider = rng.randrange(400, 600)
    assert outsider not in query
    assert f"never-seen-{outsider}" not in query


def test_counts_and_contains_match_sets_across_year_end_and_dst(paris: Any) -> None:
    now = time.time()
    rng = random.Random(4)
    active = UniqueBitmap("active", periods=("hour", "day", "week", "month"))
    truth = populate(rng, active, 400)
    assert {kind for kind, _ in truth.sets} == {"hour", "day", "week", "month"}
    assert ("week", "2020-W53") in truth.sets
    tz = ZoneInfo(ZONE)
    for (kind, suffix), users in truth.sets.items():
        if kind == "day":
            period = Day.of(date.fromisoformat(suffix), tz)
        elif kind == "week":
            period = Week.of(int(suffix[:4]), int(suffix[6:]), tz)
        elif kind == "month":
            period = Month.of(int(suffix[:4]), int(suffix[5:]), tz)
        else:
            continue
        assert active.count(kind, moment(period, 1, now=now)) == len(users), (kind, suffix)
        member = rng.choice(sorted(users, key=str))
        assert active.contains(member, kind, period.start_ts)
        assert not active.contains(999_999, kind, period.start_ts)
    hours = [(s, u) for (k, s), u in truth.sets.items() if k == "hour"]
    for suffix, users in rng.sample(hours, 20):
        local = datetime.strptime(suffix, "%Y-%m-%dT%H%z")
        assert active.count("hour", local.timestamp() + 60) == len(users), suffix


def test_both_autumn_hours_are_counted_apart(paris: Any) -> None:
    active = UniqueBitmap("active", periods=("hour", "day"))
    first = datetime(2026, 10, 25, 0, 15, tzinfo=UTC)  # 02:15 CEST
    second = datetime(2026, 10, 25, 1, 15, tzinfo=UTC)  # 02:15 CET
    active.mark(1, first)
    active.mark(2, second)
    active.mark(3, second)
    assert active.count("hour", first) == 1
    assert active.count("hour", second) == 2
    assert active.count("day", first) == 3


def test_ranges_match_the_union_of_days(paris: Any) -> None:
    rng = random.Random(5)
    active = UniqueBitmap("active")
    truth = populate(rng, active, 300, mapped=True)
    ranges = [random_range(rng) for _ in range(12)]
    ranges += [(date(2020, 12, 28), date(2021, 1, 3)), (date(2026, 10, 18), date(2026, 11, 3))]
    for first, last in ranges:
        query = active.between(noon(first), noon(last))
        assert_query_matches(query, truth.days(first, last), rng)
        assert active.between(first, last).count() == len(truth.days(first, last))
    assert_temp_keys_expire(paris)


def test_range_cover_uses_months_weeks_then_days(paris: Any) -> None:
    active = UniqueBitmap("active")
    days = list(Day.containing(noon(date(2026, 10, 20)), PARIS).shift(i) for i in range(30))
    cover = active._cover(days)  # type: ignore[arg-type]
    assert [p.name for p in cover].count("week") == 3
    assert len(cover) == 12  # Oct 20-25, W44-W46, Nov 16-18
    whole = list(days_between_dates(date(2026, 11, 1), date(2026, 12, 6)))
    assert [p.key_part for p in active._cover(whole)] == ["month:2026-11", "week:2026-W49"]
    for offset in range(60):  # any 30 consecutive days: at most 12 keys
        window = [days[0].shift(offset + i) for i in range(30)]
        assert len(active._cover(window)) <= 12  # type: ignore[arg-type]
    daily = UniqueBitmap("daily", periods=("day",))
    assert len(daily._cover(days)) == 30  # type: ignore[arg-type]
    weekly = UniqueBitmap("weekly", periods=("week",))
    with pytest.raises(ValueError, match="no day keys"):
        weekly.between(noon(date(2026, 11, 3)), noon(date(2026, 11, 10)))
    assert weekly.between(noon(date(2026, 11, 2)), noon(date(2026, 11, 15))).count() == 0


def days_between_dates(first: date, last: date) -> Iterator[Day]:
    day = first
    while day <= last:
        yield Day.of(day, PARIS)
        day += timedelta(days=1)


def test_every_operator_within_and_across_bitmaps(paris: Any) -> None:
    rng = random.Random(6)
    plays = UniqueBitmap("plays")
    premium = UniqueBitmap("premium", periods=("day", "month"))
    play_truth = populate(rng, plays, 250)
    premium_truth = populate(rng, premium, 150)
    for _ in range(3):
        (a1, a2), (b1, b2) = random_range(rng), random_range(rng)
        left, right = plays.between(noon(a1), noon(a2)), plays.between(noon(b1), noon(b2))
        other = premium.between(noon(b1), noon(b2))
        expected_left, expected_right = play_truth.days(a1, a2), play_truth.days(b1, b2)
        expected_other = premium_truth.days(b1, b2)
        for op in OPS.values():
            assert_query_matches(op(left, right), op(expected_left, expected_right), rng)
            assert_query_matches(op(left, other), op(expected_left, expected_other), rng)
            assert_query_matches(op(other, left), op(expected_other, expected_left), rng)
        nested = (left | other) - (left & other) ^ right
        expected = (expected_left | expected_other) - (expected_left & expected_other)
        assert_query_matches(nested, expected ^ expected_right, rng)
    assert_temp_keys_expire(paris)
    assert not [k for k in backend_keys(paris) if ":copy:" in k]


@pytest.mark.parametrize("density", ["dense", "sparse"])
def test_cross_bitmap_queries_copy_dense_and_sparse_operands(paris: Any, density: str) -> None:
    # Dense operands travel as GET/SET, sparse ones as DUMP/RESTORE (on the cluster).
    rng = random.Random(density)
    spread = 1 if density == "dense" else 5000
    a, b = UniqueBitmap("a", periods=("day",)), UniqueBitmap("b", periods=("day",))
    users_a = {u * spread for u in rng.sample(range(100, 900), 600)}
    users_b = {u * spread for u in rng.sample(range(100, 900), 600)}
    for user in users_a:
        a.mark(user, 0)
    for user in users_b:
        b.mark(user, 86400)
    both_days = b.between(0, 86400)  # a union, so the copied operand is a temporary result
    for op in OPS.values():
        assert op(a.day(0), both_days).count() == len(op(users_a, users_b))
        assert op(both_days, a.day(0)).count() == len(op(users_b, users_a))
    assert_temp_keys_expire(paris)
    assert not [k for k in backend_keys(paris) if ":copy:" in k]


def test_seed_cohort_premium_users_who_played_in_november(paris: Any) -> None:
    """(play:2011-11-01 | ... | play:2011-11-30) & premium:2011-11, as in seed 002."""
    rng = random.Random(7)
    play = UniqueBitmap("play", periods=("day",))
    premium = UniqueBitmap("premium", periods=("month",))
    played: set[object] = set()
    for ts in (
        rng.uniform(
            datetime(2011, 10, 25, tzinfo=PARIS).timestamp(),
            datetime(2011, 12, 5, tzinfo=PARIS).timestamp(),
        )
        for _ in range(200)
    ):
        user = rng.randrange(100, 200)
        play.mark(user, ts)
        if datetime.fromtimestamp(ts, PARIS).month == 11:
            played.add(user)
    paying = set(rng.sample(range(100, 200), 30)) | {999}
    for user in paying:
        premium.mark(user, datetime(2011, 11, 15, tzinfo=PARIS))
    november = play.between(
        datetime(2011, 11, 1, tzinfo=PARIS), datetime(2011, 11, 30, tzinfo=PARIS)
    )
    cohort = november & premium.month(2011, 11)
    assert cohort.count() == len(played & paying)
    assert (premium.month(2011, 11) & november).count() == len(played & paying)
    assert 999 in premium.month(2011, 11) and 999 not in cohort
    assert_temp_keys_expire(paris)


def test_string_and_uuid_ids_share_one_mapping(paris: Any) -> None:
    a, b = UniqueBitmap("a"), UniqueBitmap("b")
    person = uuid.UUID("12345678-1234-5678-1234-567812345678")
    a.mark(person, 0)
    a.mark("bob", 0)
    id_cache.clear()  # a fresh process must find the same offsets in Redis
    b.mark(str(person), 0)
    b.mark("eve", 0)
    both = a.day(0) & b.day(0)
    assert both.count() == 1
    assert person in both and str(person) in both and "bob" not in both
    assert a.contains("bob", "day", 0) and not b.contains("bob", "day", 0)
    assert not a.contains("nobody", "day", 0)
    mapping = paris.client.hgetall(f"{paris.prefix}:bitmapid:{{ids}}:map")
    assert {k.decode(): int(v) for k, v in mapping.items()} == {str(person): 0, "bob": 1, "eve": 2}


BAD_IDS = [
    (True, TypeError),
    (1.0, TypeError),
    (None, TypeError),
    (b"42", TypeError),
    (object(), TypeError),
    (-1, ValueError),
    (2**32, ValueError),
    (2**27, ValueError),  # above MAX_USER_ID
    ("", ValueError),
    ("x" * 513, ValueError),
]


@pytest.mark.parametrize(("bad", "error"), BAD_IDS)
def test_bad_ids_write_nothing(paris: Any, bad: object, error: type[Exception]) -> None:
    active = UniqueBitmap("active")
    with pytest.raises(error, match="user id"):
        active.mark(bad)
    if error is TypeError:
        with pytest.raises(TypeError):
            _ = bad in active.day()
    assert backend_keys(paris) == []


def test_bad_arguments_are_clear_errors(paris: Any) -> None:
    with pytest.raises(ValueError, match="Unknown period"):
        UniqueBitmap("x", periods=("day", "year"))
    with pytest.raises(TypeError):
        UniqueBitmap("x", periods="day")
    with pytest.raises(ValueError, match="braces"):
        UniqueBitmap("{x}")
    daily = UniqueBitmap("daily", periods=("day",))
    with pytest.raises(ValueError, match="keeps no hour keys"):
        daily.count("hour")
    with pytest.raises(ValueError, match="aware"):
        daily.mark(1, datetime(2026, 1, 1))
    with pytest.raises(TypeError, match="truth value"):
        bool(daily.day())
    with pytest.raises(TypeError, match="combines only with another query"):
        _ = daily.day() | {1, 2}
    with pytest.raises(ValueError, match="days must be"):
        daily.last(0)
    assert backend_keys(paris) == []


def test_largest_id_is_accepted(single: Any) -> None:
    active = UniqueBitmap("big", periods=("day",))
    active.mark(2**27 - 1, 0)  # MAX_USER_ID: 16 MB
    assert active.count("day", 0) == 1
    assert single.client.strlen(active.key(Day.containing(0))) == 2**24
    active.delete()


def test_running_period_never_goes_stale_past_ones_are_cached(paris: Any) -> None:
    active = UniqueBitmap("active")
    now = time.time()
    today = Day.containing(now, ZONE)  # Paris days: 23 or 25 hours at a DST change
    for days_ago in range(1, 12):
        active.mark(days_ago, moment(today.shift(-days_ago), 3600, now=now))
    active.mark(100, now)
    query = active.last(10)
    assert query.count() == 10  # users 1..9 and 100
    cached = [k for k in backend_keys(paris) if ":cache:" in k and not k.endswith(":gen")]
    assert len(cached) == 1
    assert 0 < paris.client.ttl(cached[0]) <= 86400
    active.mark(101, now)
    assert active.last(10).count() == 11
    assert 101 in active.last(10)
    assert_temp_keys_expire(paris)


def test_cache_can_be_disabled(paris: Any, settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "BITMAP_CACHE_TTL": 0}
    active = UniqueBitmap("active")
    for day in range(1, 20):
        active.mark(day, noon(date(2026, 10, day)))
    assert active.between(noon(date(2026, 10, 1)), noon(date(2026, 10, 19))).count() == 19
    assert backend_keys(paris) == sorted(k for k in backend_keys(paris) if ":tmp:" not in k)


def test_retention_cohort_table(paris: Any) -> None:
    rng = random.Random(8)
    active = UniqueBitmap("active", periods=("week",))
    now = time.time()
    weeks = [Week.containing(now, PARIS).shift(i - 6) for i in range(5)]
    users = [set(rng.sample(range(60), 25)) for _ in weeks]
    for week, members in zip(weeks, users, strict=True):
        for user in members:
            active.mark(user, moment(week, 3600, now=now))
    table = active.cohort("week", start=weeks[0].start_ts, periods=5)
    expected = [[len(users[i] & users[j]) for j in range(i, 5)] for i in range(5)]
    assert table == expected
    assert_temp_keys_expire(paris)


def test_objects_lists_marked_bitmaps(paris: Any) -> None:
    UniqueBitmap("b", periods=("hour", "day")).mark(1)
    UniqueBitmap("a").mark(2)
    UniqueBitmap("unused")
    assert UniqueBitmap.objects.names() == ["a", "b"]
    assert [(b.name, b.periods) for b in UniqueBitmap.objects.all()] == [
        ("a", ("day", "week", "month")),
        ("b", ("hour", "day")),
    ]
    assert UniqueBitmap.objects.get("b").periods == ("hour", "day")
    with pytest.raises(LookupError):
        UniqueBitmap.objects.get("unused")
    UniqueBitmap("a").delete()
    assert UniqueBitmap.objects.names() == ["b"]
    assert not [k for k in lasting_keys(paris) if "{a}" in k]


def test_batch_queues_marks_into_one_round_trip(single: Any) -> None:
    a, b = UniqueBitmap("a"), UniqueBitmap("b")
    with Batch() as batch:
        a.mark(1, 0, batch=batch)
        a.mark(3, 0, batch=batch)
        b.mark(2, 0, batch=batch)
        assert backend_keys(single) == []
    assert a.count("day", 0) == 2 and b.count("day", 0) == 1
    assert 3 in a.day(0)


def test_mark_is_one_round_trip(paris: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    active = UniqueBitmap("active", periods=("hour", "day", "week", "month"))
    active.mark(100)  # loads the script and lists the bitmap
    active.last(3).count()  # loads the query script (the server may not have seen it)
    trips = RoundTrips(monkeypatch)
    rounds = Rounds(monkeypatch)
    assert trips(lambda: active.mark(42)) == 1
    assert trips(lambda: active.mark(7, datetime(2020, 12, 31, 23, 59, tzinfo=PARIS))) == 1
    # A read lists the bitmap's series in its own round trip: on Redis Cluster the catalogue's
    # node may be another, asked in parallel (one more packet, no more waiting).
    nodes = nodes_of(paris.client, catalogue_key("bitmap"), active.meta_key)
    for read in (lambda: active.count("week"), lambda: active.last(3).count()):
        assert rounds(read) == 1
        assert trips(read) == nodes
    assert active.count("day") == 2


def test_mark_of_a_mapped_id_is_one_round_trip(paris: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    active = UniqueBitmap("active", periods=("hour", "day", "week", "month"))
    active.mark("first-user")  # loads the scripts and lists the bitmap
    trips = RoundTrips(monkeypatch)
    first_sight = trips(lambda: active.mark("new-user"))
    assert first_sight == (2 if paris.cluster else 1)
    assert trips(lambda: active.mark("new-user")) == 1
    assert active.count("day") == 2


def test_clean_metrics_applies_retention_per_period(paris: Any, settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "BITMAP_RETENTION": {"hour": 3, "day": 4, "week": 2},  # months keep the default (60)
    }
    active = UniqueBitmap("active", periods=("hour", "day", "week", "month"))
    old = UniqueBitmap("old", periods=("day",))
    now = datetime(2026, 11, 20, 12, 30, tzinfo=PARIS)
    for hours_ago in range(0, 24 * 20, 5):
        active.mark(hours_ago, now - timedelta(hours=hours_ago))
    old.mark(1, now - timedelta(days=30))
    assert UniqueBitmap.objects.names() == ["active", "old"]
    before = {k for k in backend_keys(paris) if ":day:" in k}

    def kept(kind: str) -> list[str]:
        return sorted(k.rsplit(":", 1)[1] for k in backend_keys(paris) if f"}}:{kind}:" in k)

    dry = cleanup.clean_all(now=now, dry_run=True, kinds=["bitmap"])[0]
    assert {k for k in backend_keys(paris) if ":day:" in k} == before
    report = cleanup.clean_all(now=now, kinds=["bitmap"])[0]
    assert report.items_removed == dry.items_removed > 0
    assert report.metrics_removed == ["old"]
    assert kept("day") == ["2026-11-17", "2026-11-18", "2026-11-19", "2026-11-20"]
    assert kept("week") == ["2026-W46", "2026-W47"]
    assert kept("month") == ["2026-10", "2026-11"]
    assert kept("hour") == ["2026-11-20T12+0100"]  # marks every 5 hours: 10:00 and 11:00 unmarked
    assert active.count("day", now) == len(
        {h for h in range(0, 24 * 20, 5) if (now - timedelta(hours=h)).date() == now.date()}
    )
    assert UniqueBitmap.objects.names() == ["active"]
    assert not [k for k in lasting_keys(paris) if "{old}" in k]
    members = paris.client.zrange(active.index_key("day"), 0, -1)
    assert sorted(m.decode() for m in members) == kept("day")
    assert cleanup.clean_all(now=now, kinds=["bitmap"])[0].items_removed == 0


# clean_metrics archives too: a pass writes to the database.
@pytest.mark.django_db(transaction=True)
def test_clean_metrics_command_cleans_bitmaps(paris: Any) -> None:
    active = UniqueBitmap("active", periods=("day",))
    active.mark(1, datetime.now(UTC) - timedelta(days=400))
    active.mark(2)
    out = StringIO()
    call_command("clean_metrics", "--kind", "bitmap", stdout=out)
    assert "bitmap: checked 1, removed 1 old entries" in out.getvalue()
    assert active.count("day") == 1


@pytest.mark.parametrize(
    ("key", "value", "code"),
    [
        ("BITMAP_RETENTION", {"day": 0}, "E030"),
        ("BITMAP_RETENTION", {"year": 3}, "E030"),
        ("BITMAP_RETENTION", [("day", 3)], "E030"),
        ("BITMAP_CACHE_TTL", -1, "E031"),
        ("BITMAP_CACHE_TTL", "60", "E031"),
    ],
)
def test_checks_reject_bad_bitmap_settings(
    settings: Any, key: str, value: object, code: str
) -> None:
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": "redis://127.0.0.1:1/0", key: value}
    assert [e.id for e in check_settings()] == [f"django_redis_metrics.{code}"]
    settings.DJANGO_REDIS_METRICS = {"BITMAP_RETENTION": {"hour": 24}, "BITMAP_CACHE_TTL": 0}
    assert check_settings() == []


def test_a_retired_bitmap_is_listed_again_by_its_next_mark(paris: Any) -> None:
    active = UniqueBitmap("active", periods=("day",))
    active.mark(1, datetime(2020, 1, 1, tzinfo=PARIS))
    report = cleanup.clean_all(now=datetime(2026, 1, 1, tzinfo=PARIS), kinds=["bitmap"])[0]
    assert report.metrics_removed == ["active"]
    assert UniqueBitmap.objects.names() == [] and lasting_keys(paris) == []
    active.mark(2, datetime(2026, 1, 1, tzinfo=PARIS))
    assert UniqueBitmap.objects.names() == ["active"]
    # A bitmap that still holds a period is never retired, whatever the catalogue says.
    assert not bitmap_cleaner._retire(paris.client, active)
    assert UniqueBitmap.objects.names() == ["active"]


@pytest.mark.parametrize("keep", [0, -3, True, "2"])
def test_bad_retention_is_refused_before_anything_is_cleaned(
    paris: Any, settings: Any, keep: object
) -> None:
    # The system check does not run for call_command/clean_all: the cleaner validates itself.
    active = UniqueBitmap("active")
    active.mark(5)
    before = {k: paris.client.type(k) for k in backend_keys(paris)}
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "BITMAP_RETENTION": {"day": keep},
    }
    with pytest.raises((TypeError, ValueError), match="BITMAP_RETENTION"):
        cleanup.clean_all(kinds=["bitmap"])
    with pytest.raises((TypeError, ValueError), match="BITMAP_RETENTION"):
        call_command("clean_metrics", "--kind", "bitmap", stdout=StringIO())
    assert {k: paris.client.type(k) for k in backend_keys(paris)} == before
    assert active.count("day") == 1


def test_retention_cutoff_never_passes_the_current_period() -> None:
    now = datetime(2026, 11, 20, 12, tzinfo=UTC).timestamp()
    today = Day.containing(now, get_zone()).start_ts  # the site's day, as the cleaner's
    for keep in (1, 0, -5):
        assert bitmap_cleaner.retention_cutoff("day", keep, now) == today


def test_delete_then_recreate_never_reads_old_cached_unions(paris: Any) -> None:
    active = UniqueBitmap("active")
    first, last = date(2024, 3, 4), date(2024, 3, 6)
    for user in range(10):
        active.mark(user, noon(first))
    active.mark(500, noon(last))
    assert active.between(first, last).count() == 11
    active.delete()
    active.mark(1, noon(first))
    assert active.between(first, last).count() == 1
    assert 500 not in active.between(first, last)
    # Only keys with a TTL are left behind by delete (and the PREFIX's kind of ids).
    active.delete()
    assert lasting_keys(paris) == []
    for key in backend_keys(paris):
        assert paris.client.pttl(key) > 0 or key.endswith(":bitmapid:{ids}:kind"), key


def test_cleaner_drops_cached_unions_holding_dropped_days(paris: Any, settings: Any) -> None:
    active = UniqueBitmap("active", periods=("day",))
    now = datetime(2026, 11, 20, 12, tzinfo=PARIS)
    for days_ago in range(1, 8):
        active.mark(days_ago, now - timedelta(days=days_ago))
    week = active.between(now - timedelta(days=7), now - timedelta(days=1))
    assert week.count() == 7
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "BITMAP_RETENTION": {"day": 4},
    }
    cleanup.clean_all(now=now, kinds=["bitmap"])
    assert active.between(now - timedelta(days=7), now - timedelta(days=1)).count() == 3


def test_a_late_mark_into_a_finished_period_is_seen_by_cached_ranges(paris: Any) -> None:
    active = UniqueBitmap("active")
    now = time.time()
    day_before = Day.containing(now).shift(-3)
    yesterday = day_before.next
    active.mark(1, moment(day_before, 10, now=now))
    active.mark(2, moment(yesterday, 10, now=now))
    assert active.between(day_before.start_ts, yesterday.start_ts).count() == 2
    # Stamped in the period's last instant, it reaches Redis after the union was cached.
    active.mark(3, yesterday.end_ts - 0.001)
    assert active.between(day_before.start_ts, yesterday.start_ts).count() == 3
    active.mark(4, yesterday.start_ts)  # a backfill, too
    assert 4 in active.between(day_before.start_ts, yesterday.start_ts)


def test_periods_are_cached_only_after_a_grace_period(
    paris: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    active = UniqueBitmap("active", periods=("day",))
    today = Day.containing(None)
    assert UniqueBitmap.CACHE_GRACE == 600
    with_cache = active.between(today.shift(-3).start_ts, today.start_ts)
    assert isinstance(with_cache, bitmap_query.Operation)
    assert isinstance(with_cache.left, bitmap_query.PeriodUnion) and with_cache.left.cacheable
    # With a grace longer than the range, nothing of it is cached.
    monkeypatch.setattr(UniqueBitmap, "CACHE_GRACE", 5 * 86400)
    fresh = active.between(today.shift(-3).start_ts, today.start_ts)
    assert isinstance(fresh, bitmap_query.PeriodUnion) and not fresh.cacheable


def test_membership_reads_bits_only(paris: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = UniqueBitmap("a", periods=("day",)), UniqueBitmap("b", periods=("day",))
    for user in (1, 2, 3):
        a.mark(user, 0)
    for user in (2, 3, 4):
        b.mark(user, 86400)
    query = (a.between(0, 86400) - b.day(86400)) | (b.day(86400) & a.day(0)) ^ a.day(0)
    expected = ({1, 2, 3} - {2, 3, 4}) | ({2, 3, 4} & {1, 2, 3}) ^ {1, 2, 3}

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("membership must not run the query script")

    monkeypatch.setattr(bitmap_query, "_run_program", refuse)
    for user in range(6):
        assert (user in query) == (user in expected), user
    assert not [k for k in backend_keys(paris) if ":tmp:" in k]


def test_time_zone_is_checked_before_an_id_is_mapped(paris: Any, settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {
        **settings.DJANGO_REDIS_METRICS,
        "TIME_ZONE": "Mars/Olympus_Mons",
    }
    with pytest.raises(ValueError, match="time zone"):
        UniqueBitmap("active").mark("alice")
    assert backend_keys(paris) == []


def test_id_cache_follows_the_server_not_the_setting(single: Any, settings: Any) -> None:
    # A CACHES alias keeps its name when its LOCATION moves: the id cache must not carry over.
    other_db = single.url.rsplit("/", 1)[0] + "/5"
    active = UniqueBitmap("active")
    active.mark("alice", 0)
    active.mark("bob", 0)
    settings.DJANGO_REDIS_METRICS = {**settings.DJANGO_REDIS_METRICS, "CONNECTION": other_db}
    moved = get_redis_connection()
    assert bitmap_ids.server_identity(moved) != bitmap_ids.server_identity(single.client)
    assert id_cache.get(moved, "bob") is None
    active.mark("bob", 0)
    assert moved.hget(f"{single.prefix}:bitmapid:{{ids}}:map", "bob") == b"0"
    moved.flushdb()


class ScriptSources:
    """The period keys each script call reads (wrappers around ``LuaScript.__call__`` and
    ``LuaScript.queue``, for calls sent one by one and pipelined)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, int]] = []
        original, queue = LuaScript.__call__, LuaScript.queue

        def count(script: LuaScript, keys: Any) -> None:
            sources = [
                k
                for k in keys
                if ":tmp:" not in k
                and any(f"}}:{p}:" in k for p in ("hour", "day", "week", "month"))
            ]
            self.calls.append((script.name, len(sources)))

        def counting(script: LuaScript, client: Any, keys: Any, args: Any = ()) -> Any:
            count(script, keys)
            return original(script, client, keys, args)

        def queuing(script: LuaScript, pipe: Any, keys: Any, args: Any = ()) -> None:
            count(script, keys)
            queue(script, pipe, keys, args)

        monkeypatch.setattr(LuaScript, "__call__", counting)
        monkeypatch.setattr(LuaScript, "queue", queuing)

    @property
    def most(self) -> int:
        return max(n for _, n in self.calls)


def test_a_long_range_is_built_in_bounded_steps(
    paris: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(9)
    daily = UniqueBitmap("daily", periods=("day",))
    other = UniqueBitmap("other", periods=("month",))
    first = date(2025, 1, 1)
    truth: dict[date, set[object]] = defaultdict(set)
    for _ in range(300):
        day, user = first + timedelta(days=rng.randrange(400)), rng.randrange(300)
        daily.mark(user, noon(day))
        truth[day].add(user)
    paying = set(rng.sample(range(300), 100))
    for user in paying:
        other.mark(user, noon(date(2025, 6, 15)))
    last = first + timedelta(days=399)
    expected = set().union(*truth.values())
    # Loaded first: a first call pipelined with the series listing would be sent twice.
    bitmap_query.script("bitmap_union").ensure_loaded(get_redis_connection())
    sources = ScriptSources(monkeypatch)
    assert daily.between(first, last).count() == len(expected)  # built, then cached
    assert sources.most == bitmap_query.MAX_SCRIPT_SOURCES
    assert [n for n, _ in sources.calls].count("bitmap_union") == 13  # 400 days, 32 a step
    before = len(sources.calls)
    assert daily.between(first, last).count() == len(expected)  # the cache, checked first
    assert [n for n, _ in sources.calls[before:]] == ["bitmap_union", "bitmap_query"]
    assert (daily.between(first, last) & other.month(2025, 6)).count() == len(expected & paying)
    assert (other.month(2025, 6) - daily.between(first, last)).count() == len(paying - expected)
    daily.mark(999, noon(first + timedelta(days=50)))  # a late mark: a new generation
    truth[first + timedelta(days=50)].add(999)
    expected.add(999)
    assert daily.between(first, last).count() == len(expected)
    half = first + timedelta(days=199)
    early = set().union(*(u for d, u in truth.items() if d <= half))
    late = set().union(*(u for d, u in truth.items() if d > half))
    two = daily.between(first, half) ^ daily.between(half + timedelta(days=1), last)
    assert two.count() == len(early ^ late)
    assert sources.most <= bitmap_query.MAX_SCRIPT_SOURCES
    assert_temp_keys_expire(paris)
    assert not [k for k in backend_keys(paris) if ":pre:" in k]


def test_a_prebuilt_union_gone_stale_is_built_again(
    paris: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    daily = UniqueBitmap("daily", periods=("day",))
    first = date(2025, 1, 1)
    for offset in range(0, 100, 2):
        daily.mark(offset, noon(first + timedelta(days=offset)))
    original = bitmap_query._build_union
    builds: list[bool] = []

    def build_then_mark_late(union: Any, *, use_cache: bool) -> Any:
        built = yield from original(union, use_cache=use_cache)
        builds.append(use_cache)
        if len(builds) == 1:  # a late mark lands between the steps and the final call
            daily.mark(1, noon(first + timedelta(days=3)))
        return built

    monkeypatch.setattr(bitmap_query, "_build_union", build_then_mark_late)
    assert daily.between(first, first + timedelta(days=99)).count() == 51
    assert builds == [True, True]
    assert daily.between(first, first + timedelta(days=99)).count() == 51
    assert_temp_keys_expire(paris)
    assert not [k for k in backend_keys(paris) if ":pre:" in k]


def snapshot(backend: Any) -> dict[str, Any]:
    """Every key of the test with its value (DUMP), to show that nothing was written."""
    return {k: backend.client.dump(k) for k in backend_keys(backend)}


@pytest.mark.parametrize("first", ["int", "mapped"])
def test_int_and_mapped_ids_never_mix_in_one_prefix(paris: Any, first: str) -> None:
    active, other = UniqueBitmap("active"), UniqueBitmap("other", periods=("day",))
    ids: dict[str, list[object]] = {
        "int": [0, 7],
        "mapped": ["alice", uuid.UUID(int=7)],
    }
    second = "mapped" if first == "int" else "int"
    for user in ids[first]:
        active.mark(user, 0)
    before = snapshot(paris)
    for fresh_process in (False, True):
        if fresh_process:
            id_cache.clear()
        for user in ids[second]:
            for bitmap in (active, other):
                with pytest.raises(ValueError, match="one kind of user id per PREFIX"):
                    bitmap.mark(user, 0)
                with (
                    pytest.raises(ValueError, match="one kind of user id per PREFIX"),
                    Batch() as batch,
                ):
                    bitmap.mark(user, 0, batch=batch)
        assert snapshot(paris) == before
    # The ids of the other kind were never marked: never members, whatever their offset.
    for user in ids[second]:
        assert not active.contains(user, "day", 0)
        assert user not in active.day(0) and user not in active.between(0, 86400)
    for user in ids[first]:
        assert active.contains(user, "day", 0) and user in active.day(0)
    assert active.count("day", 0) == 2


def test_a_long_retention_table_is_built_in_bounded_steps(
    paris: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(10)
    active = UniqueBitmap("active", periods=("week",))
    # 70 weeks that ended 5 weeks ago, within the 105 weeks a bitmap keeps.
    now = time.time()
    weeks = [Week.containing(now, PARIS).shift(i - 75) for i in range(70)]
    users = [set(rng.sample(range(40), 10)) if i != 3 else set() for i in range(70)]
    for week, members in zip(weeks, users, strict=True):
        for user in members:
            active.mark(user, moment(week, 3600, now=now))
    sources = ScriptSources(monkeypatch)
    table = active.cohort("week", start=weeks[0].start_ts, periods=70)
    assert table == [[len(users[i] & users[j]) for j in range(i, 70)] for i in range(70)]
    assert sources.most <= bitmap_query.MAX_SCRIPT_SOURCES
    assert_temp_keys_expire(paris)
