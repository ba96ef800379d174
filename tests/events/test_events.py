"""EventSeries against a plain Python model of the same events, on a single node and a cluster."""

from __future__ import annotations

import itertools
import math
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
import redis.connection
from django.core.management import call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from django_redis_metrics import Batch, EventSeries
from django_redis_metrics.checks import check_settings
from django_redis_metrics.cleanup import CLEANERS
from django_redis_metrics.core.scripts import MetricsRefused
from django_redis_metrics.events.cleaner import clean_event_series
from django_redis_metrics.events.codec import encode_value, window_index

from ..roundtrips import RoundTrips

T0 = 1_700_000_000.0


@dataclass
class Model:
    """What an EventSeries should answer, computed the obvious way."""

    events: list[dict[str, Any]] = field(default_factory=list)

    def add(self, event_id: int, timestamp: float, fields: dict[str, Any]) -> None:
        self.events.append({"id": event_id, "timestamp": timestamp, **fields})

    def ordered(self) -> list[dict[str, Any]]:
        # Redis orders equal scores by member, and members are the ids as strings.
        return sorted(self.events, key=lambda e: (e["timestamp"], str(e["id"])))

    def between(self, lo: float, hi: float) -> list[dict[str, Any]]:
        return [e for e in self.ordered() if lo <= e["timestamp"] <= hi]

    def counts(self, lo: float, hi: float, window: float) -> list[int]:
        first, last = window_index(lo, window), window_index(hi, window)
        return [
            sum(1 for e in self.between(lo, hi) if k * window <= e["timestamp"] < (k + 1) * window)
            for k in range(first, last + 1)
        ]

    def count_by(self, name: str, lo: float, hi: float) -> dict[str, int]:
        result: dict[str, int] = {}
        for e in self.between(lo, hi):
            if name in e:
                text = encode_value(name, e[name])[1]
                result[text] = result.get(text, 0) + 1
        return result


def below(timestamp: float) -> float:
    """The last time before ``timestamp``: ``counts(a, below(b), w)`` covers whole windows
    up to ``b`` (the last window is not clipped, so it can be cached)."""
    return math.nextafter(timestamp, -math.inf)


def unique(prefix: str = "s") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


# A handful of types per field, so equal texts of different types meet in count_by.
values = st.one_of(
    st.sampled_from(["a", "b", "1", "x:y", "é"]),
    st.integers(-2, 3),
    st.sampled_from([1.5, -0.25, 2.0]),
    st.booleans(),
    st.sampled_from([date(2024, 2, 29), datetime(2024, 1, 1, 12, tzinfo=UTC)]),
)
timestamps = st.one_of(
    st.floats(T0, T0 + 100, allow_nan=False),
    st.integers(int(T0), int(T0) + 100).map(float),
)
events_strategy = st.lists(
    st.tuples(
        timestamps,
        st.dictionaries(st.sampled_from(["kind", "user", "note"]), values, min_size=1),
    ),
    min_size=0,
    max_size=40,
)


def test_record_round_trips_types_and_precision(backend: Any) -> None:
    orders = EventSeries("orders", index=["type"])
    when = datetime(2026, 11, 21, 14, 0, 0, 123456, tzinfo=UTC)
    fields = {
        "type": "purchase",
        "user": 42,
        "total": Decimal("19.90"),
        "ratio": 0.1,
        "paid": True,
        "day": date(2026, 11, 21),
        "at": datetime(2026, 11, 21, 15, 0, tzinfo=timezone(timedelta(hours=1))),
        "note": "1",
    }
    first = orders.record(when, **fields)
    second = orders.record(when.timestamp() + 0.5, type="refund")
    assert (first, second) == (1, 2)
    events = orders.between(when, when.timestamp() + 1)
    assert events == [
        {"id": 1, "timestamp": when.timestamp(), **fields},
        {"id": 2, "timestamp": when.timestamp() + 0.5, "type": "refund"},
    ]
    got = events[0]
    assert type(got["user"]) is int and type(got["paid"]) is bool
    assert type(got["day"]) is date and got["at"].utcoffset() == timedelta(hours=1)
    assert got["timestamp"] == 1795269600.123456
    assert EventSeries.objects.names() == ["orders"]
    assert EventSeries.objects.get("orders").index == ("type",)


# The same examples in every run: CI once failed here on Python 3.13 with no output kept,
# which 300,000 random examples on 3.13 then did not reproduce; a failure now reproduces.
@settings(
    max_examples=12,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    events=events_strategy,
    lo=st.floats(T0 - 5, T0 + 105, allow_nan=False),
    span=st.floats(0, 110, allow_nan=False),
    window=st.sampled_from([1, 7, 30, 2.5]),
)
def test_queries_match_the_model(
    backend: Any, events: list[tuple[float, dict[str, Any]]], lo: float, span: float, window: float
) -> None:
    series = EventSeries(unique(), index=["kind"])
    model = Model()
    many = [{"when": ts, **fields} for ts, fields in events[: len(events) // 2]]
    ids = series.record_many(many)
    for event_id, (ts, fields) in zip(ids, events, strict=False):
        model.add(event_id, ts, fields)
    for ts, fields in events[len(events) // 2 :]:
        model.add(series.record(ts, **fields), ts, fields)
    hi = lo + span

    assert series.between(lo, hi) == model.between(lo, hi)
    assert series.between(lo, hi, limit=3) == model.between(lo, hi)[:3]
    assert series.count(lo, hi) == len(model.between(lo, hi))
    assert series.counts(lo, hi, window) == model.counts(lo, hi, window)
    assert series.counts(lo, hi, window) == model.counts(lo, hi, window)  # now from the cache
    assert series.count_by("kind", lo, hi) == model.count_by("kind", lo, hi)
    assert series.count_by("user", lo, hi) == model.count_by("user", lo, hi)
    everything = model.ordered()
    assert series.earliest(5) == everything[:5]
    assert series.latest(5) == everything[::-1][:5]


def test_paging_crosses_page_boundaries(single: Any, monkeypatch: pytest.MonkeyPatch) -> None:

    monkeypatch.setattr(EventSeries, "PAGE", 7)
    monkeypatch.setattr(EventSeries, "VALUES_PER_CALL", 2)
    series = EventSeries(unique(), index=["kind"])
    model = Model()
    batch = [{"when": T0 + i // 3, "kind": f"k{i % 5}", "user": i % 4} for i in range(50)]
    for event_id, item in zip(series.record_many(batch), batch, strict=True):
        fields = dict(item)
        model.add(event_id, fields.pop("when"), fields)
    assert series.between(T0 + 2, T0 + 13) == model.between(T0 + 2, T0 + 13)
    assert list(series.iter_between(T0, T0 + 100)) == model.between(T0, T0 + 100)
    assert series.between(T0, T0 + 100, limit=15) == model.between(T0, T0 + 100)[:15]
    assert series.latest(20) == model.ordered()[::-1][:20]
    assert series.count_by("user", T0 + 2, T0 + 13) == model.count_by("user", T0 + 2, T0 + 13)
    assert series.count_by("kind", T0, T0 + 100) == model.count_by("kind", T0, T0 + 100)


def test_cache_never_serves_a_stale_window(backend: Any) -> None:
    series = EventSeries(unique())
    model = Model()
    base = T0 - T0 % 60  # a multiple of 60
    for ts in (base + 1, base + 65, base + 65.5, base + 130):
        model.add(series.record(ts, kind="a"), ts, {"kind": "a"})
    lo, hi = base, below(base + 180)
    assert series.counts(lo, hi, 60) == [1, 2, 1]
    cache = backend.client.zrange(series.cache_key(60), 0, -1, withscores=True)
    assert [s for _, s in cache] == [base, base + 60, base + 120]  # all closed (in 2023)
    assert backend.client.smembers(series.sizes_key) == {b"60"}

    # A late, back-dated event lands in a cached window: that window must be recounted.
    late = base + 119.999
    model.add(series.record(late, kind="late"), late, {"kind": "late"})
    assert series.counts(lo, hi, 60) == [1, 3, 1] == model.counts(lo, hi, 60)
    # An event exactly on a window boundary belongs to the window that starts there.
    model.add(series.record(base + 120, kind="edge"), base + 120, {})
    assert series.counts(lo, hi, 60) == [1, 3, 2] == model.counts(lo, hi, 60)
    assert series.counts(lo, hi, 1) == model.counts(lo, hi, 1)
    model.add(series.record(base + 0.5, kind="early"), base + 0.5, {})
    assert series.counts(lo, hi, 1) == model.counts(lo, hi, 1)
    assert series.counts(lo, hi, 60) == [2, 3, 2]
    # Windows not touched by a late event were served from the cache (tamper to prove it).
    backend.client.zadd(series.cache_key(60), {f"{int(base + 120)}:99": base + 120})
    backend.client.zremrangebyscore(series.cache_key(60), base + 120, base + 120)
    backend.client.zadd(series.cache_key(60), {f"{int(base + 120)}:99": base + 120})
    assert series.counts(lo, hi, 60) == [2, 3, 99]


def test_open_window_is_not_cached(backend: Any) -> None:
    series = EventSeries(unique())
    now = datetime.now(UTC).timestamp()
    series.record(now, kind="a")
    assert series.counts(now - 7200, now, 3600) == [0, 0, 1]
    cached = backend.client.zrange(series.cache_key(3600), 0, -1, withscores=True)
    current = window_index(now, 3600) * 3600
    assert current not in [score for _, score in cached]
    series.record(now, kind="b")
    assert series.counts(now, now, 3600) == [2]


def _series_keys(backend: Any, series: EventSeries) -> set[str]:
    found: list[str] = backend.keys()
    return {k for k in found if f"{{{series.name}}}" in k}


def test_preen_removes_old_events_entirely(backend: Any) -> None:
    name = unique()
    writer = EventSeries(name, index=["kind"], retention=1000)  # keeps all twelve
    series = EventSeries(name, index=["kind"], retention=100)
    model = Model()
    rows = [(T0 + i * 10, {"kind": f"k{i % 3}" if i < 6 else "new", "n": i}) for i in range(12)]
    for ts, fields in rows:
        model.add(writer.record(ts, **fields), ts, fields)
    series.counts(T0, T0 + 119, 30)
    series.counts(T0, T0 + 119, 7)
    now = T0 + 160  # cutoff T0 + 60: the six oldest events (k0, k1, k2) go
    assert series.preen(now, batch_size=4) == 6
    kept = [e for e in model.events if e["timestamp"] >= T0 + 60]
    assert series.between(T0 - 1000, T0 + 1000) == kept
    assert series.count_by("kind", T0 - 1000, T0 + 1000) == {"new": 6}
    keys = _series_keys(backend, series)
    for e in model.events:
        assert (series.event_key(e["id"]) in keys) == (e["timestamp"] >= T0 + 60)
    assert not any(":by:kind:k" in k for k in keys)
    assert backend.client.smembers(series.values_key("kind")) == {b"new"}
    for size in (30, 7):
        cached = backend.client.zrange(series.cache_key(size), 0, -1, withscores=True)
        starts = [s for _, s in cached]
        # Windows holding a removed event are gone; later ones may stay.
        assert all(s > T0 + 50 for s in starts)
    assert series.counts(T0, T0 + 119, 30) == Model(kept).counts(T0, T0 + 119, 30)
    expected = {
        series.key("seq"),
        series.time_key,
        series.meta_key,
        series.sizes_key,
        series.index_key("kind", "new"),
        series.values_key("kind"),
        series.cache_key(30),
        series.cache_key(7),
        *(series.event_key(e["id"]) for e in kept),
    }
    assert keys == expected

    assert series.preen(T0 + 10_000) == 6
    assert _series_keys(backend, series) == {series.key("seq"), series.meta_key}
    series.delete()
    assert _series_keys(backend, series) == set()
    assert EventSeries.objects.names() == []


@pytest.mark.django_db(transaction=True)  # clean_metrics archives
def test_cleaner_and_clean_metrics(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cleaner removes what writes left (here, none is removed as it is written)."""
    monkeypatch.setattr(EventSeries, "PRUNE_PER_WRITE", 0)
    assert CLEANERS["events"] is clean_event_series
    short = EventSeries("short", retention=60, index=["k"])
    default = EventSeries("default")
    now = datetime.now(UTC).timestamp()
    short.record(now - 120, k="old")
    short.record(now, k="new")
    default.record(now - 40 * 86400, x=1)
    default.record(now - 86400, x=2)
    report = clean_event_series(backend.client, now=now, dry_run=True)
    assert (report.metrics_checked, report.items_removed) == (2, 2)
    call_command("clean_metrics", "--dry-run", verbosity=0)
    assert short.size() == 2 and default.size() == 2
    with pytest.raises(LookupError):
        EventSeries.objects.get("never-recorded")
    call_command("clean_metrics", "--kind", "events", verbosity=0)
    assert [e["k"] for e in short.latest(10)] == ["new"]
    assert [e["x"] for e in default.latest(10)] == [2]
    assert short.index_key("k", "old") not in _series_keys(backend, short)
    assert short.index_key("k", "new") in _series_keys(backend, short)
    assert sorted(s.name for s in EventSeries.objects.all()) == ["default", "short"]
    assert EventSeries.objects.get("short").retention == 60


BAD_INPUTS: list[tuple[type[Exception], dict[str, Any]]] = [
    (ValueError, {}),
    (ValueError, {"id": 1}),
    (ValueError, {"timestamp": 1.0}),
    (ValueError, {"kind": "a", "when": float("nan")}),
    (ValueError, {"kind": "a", "when": datetime(2026, 1, 1)}),
    (TypeError, {"kind": "a", "when": "yesterday"}),
    (TypeError, {"kind": None}),
    (TypeError, {"kind": b"bytes"}),
    (TypeError, {"kind": [1, 2]}),
    (ValueError, {"kind": float("inf")}),
    (ValueError, {"kind": datetime(2026, 1, 1)}),
    (ValueError, {"": 1}),
]


@pytest.mark.parametrize(("error", "fields"), BAD_INPUTS)
def test_bad_record_writes_nothing(backend: Any, error: type[Exception], fields: Any) -> None:
    series = EventSeries("bad", index=["kind"])
    with pytest.raises(error):
        series.record(**fields)
    with pytest.raises(error):
        series.record_many([{"kind": "fine", "when": T0}, fields])
    assert backend.keys() == []


def test_bad_arguments_are_rejected(backend: Any) -> None:
    series = EventSeries("bad", index=["kind"])
    with pytest.raises(TypeError, match="str"):
        series.record_many([{"kind": "a"}, {1: "a"}])  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        series.record_many(["not a mapping"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="window"):
        series.counts(T0, T0 + 1, 0)
    with pytest.raises(ValueError, match="window"):
        series.counts(T0, T0 + 1, -5)
    with pytest.raises(TypeError, match="window"):
        series.counts(T0, T0 + 1, True)
    with pytest.raises(ValueError, match="after end"):
        series.between(T0 + 1, T0)
    with pytest.raises(ValueError, match="after end"):
        series.counts(T0 + 1, T0, 60)
    with pytest.raises(ValueError, match="after end"):
        series.count_by("kind", T0 + 1, T0)
    with pytest.raises(ValueError, match="reserved"):
        series.count_by("id", T0, T0 + 1)
    with pytest.raises(ValueError, match="positive"):
        series.between(T0, T0 + 1, limit=0)
    for name in ("", "a{b}", 5, "x\n"):
        with pytest.raises((TypeError, ValueError)):
            EventSeries(name)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="reserved"):
        EventSeries("s", index=["timestamp"])
    with pytest.raises(ValueError, match="':'"):
        EventSeries("s", index=["a:b"])
    with pytest.raises(TypeError):
        EventSeries("s", index="kind")
    with pytest.raises(ValueError, match="retention"):
        EventSeries("s", retention=0)
    assert backend.keys() == []


def test_retention_setting_and_check(settings: Any) -> None:
    settings.DJANGO_REDIS_METRICS = {"EVENT_RETENTION": 3600}
    assert EventSeries("s").retention == 3600
    assert EventSeries("s", retention=5).retention == 5
    settings.DJANGO_REDIS_METRICS = {"EVENT_RETENTION": -1}
    assert [e.id for e in check_settings()] == ["django_redis_metrics.E020"]
    settings.DJANGO_REDIS_METRICS = {"EVENT_RETENTION": "a week"}
    assert [e.id for e in check_settings()] == ["django_redis_metrics.E020"]


def test_one_round_trip_per_write(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    series = EventSeries(unique(), index=["kind", "user"])
    series.record(T0, kind="warm-up", user=0)  # loads the scripts, settles cluster routing
    series.counts(T0, T0 + 287 * 300, 300)
    series.count_by("kind", T0, T0 + 1)  # a script the server may not have seen (NOSCRIPT)
    series.count_by("note", T0, T0 + 1)
    trips = RoundTrips(monkeypatch)
    assert trips.measure(lambda: series.record(T0 + 1, kind="a", user=1, note="x")) == 1
    assert trips.measure(lambda: series.record(T0 + 2, kind="b", user=2)) == 1
    with Batch() as batch:
        series.record(T0 + 3, kind="c", batch=batch)
        series.record(T0 + 4, kind="d", batch=batch)
    assert batch.results == [4, 5]
    assert trips.measure(lambda: series.counts(T0, T0 + 287 * 300 + 1, 300)) == 1
    assert trips.measure(lambda: series.count_by("kind", T0, T0 + 10)) == 1
    assert trips.measure(lambda: series.count_by("note", T0, T0 + 10)) == 1
    many = [{"when": T0 + i, "kind": f"k{i % 7}"} for i in range(1200)]
    assert trips.measure(lambda: series.record_many(many)) == 1  # 3 script calls, 1 pipeline
    assert series.count(T0, T0 + 2000) == 1205


def test_recorders_racing_a_preener_and_a_chart(backend: Any) -> None:
    """Recorders write events on both sides of the retention cutoff while a preener and a
    polling chart run: afterwards every event inside retention is there, with its index entries,
    nothing of an event outside it is left, and no cached window is stale."""
    import random
    import threading

    series = EventSeries(unique(), index=["kind"], retention=100)
    now = T0 + 200  # cutoff T0 + 100
    recorded: list[tuple[int, float, str]] = []
    lock = threading.Lock()
    stop = threading.Event()
    errors: list[BaseException] = []

    def recorder(seed: int) -> None:
        rng = random.Random(seed)
        try:
            for i in range(150):
                ts = T0 + rng.uniform(0, 200)
                kind = f"k{rng.randrange(6)}"
                if i % 10 == 0:
                    rows = [{"when": ts + j * 0.01, "kind": kind} for j in range(5)]
                    ids = series.record_many(rows)
                    got = [(eid, r["when"], kind) for eid, r in zip(ids, rows, strict=True)]
                else:
                    got = [(series.record(ts, kind=kind), ts, kind)]
                with lock:
                    recorded.extend(got)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def preener() -> None:
        try:
            while not stop.is_set():
                series.preen(now, batch_size=7)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    def chart() -> None:
        try:
            while not stop.is_set():
                series.counts(T0, T0 + 200, 10)
                series.counts(T0, T0 + 200, 25)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    recorders = [threading.Thread(target=recorder, args=(seed,)) for seed in range(4)]
    helpers = [threading.Thread(target=preener), threading.Thread(target=chart)]
    for thread in recorders + helpers:
        thread.start()
    for thread in recorders:
        thread.join()
    stop.set()
    for thread in helpers:
        thread.join()
    assert not errors
    series.preen(now)

    cutoff = now - 100
    kept = sorted((ts, str(eid), kind) for eid, ts, kind in recorded if ts >= cutoff)
    gone = [eid for eid, ts, _ in recorded if ts < cutoff]
    assert len(recorded) == 4 * (135 + 15 * 5) and gone and kept
    got = series.between(T0 - 1, T0 + 1000)
    assert [(e["timestamp"], str(e["id"]), e["kind"]) for e in got] == kept
    keys = _series_keys(backend, series)
    assert not any(series.event_key(eid) in keys for eid in gone)
    model = Model()
    for ts, eid, kind in kept:
        model.add(int(eid), ts, {"kind": kind})
    assert series.count_by("kind", T0, T0 + 200) == model.count_by("kind", T0, T0 + 200)
    kinds = {kind for _, _, kind in kept}
    assert {k for k in keys if ":by:kind:" in k} == {series.index_key("kind", k) for k in kinds}
    for key in (series.index_key("kind", k) for k in kinds):
        assert backend.client.zrangebyscore(key, "-inf", f"({cutoff}") == []
    assert series.counts(T0, T0 + 200, 10) == model.counts(T0, T0 + 200, 10)
    assert series.counts(T0, T0 + 200, 25) == model.counts(T0, T0 + 200, 25)


# Review findings (issue 3): every bad input is refused before the first write.


def test_too_many_fields_is_a_clear_error_and_writes_nothing(backend: Any) -> None:

    series = EventSeries("wide", index=["kind"])
    series.record(T0, kind="a")
    before = backend.keys()
    wide = {f"f{i}": i for i in range(EventSeries.MAX_FIELDS + 1)}
    with pytest.raises(ValueError, match=f"at most {EventSeries.MAX_FIELDS} fields"):
        series.record(T0 + 1, **wide)
    with pytest.raises(ValueError, match=f"at most {EventSeries.MAX_FIELDS} fields"):
        series.record_many([{"when": T0 + 2, "kind": "b"}, {"when": T0 + 3, **wide}])
    with pytest.raises(ValueError, match="index at most"):
        EventSeries("wide", index=[f"f{i}" for i in range(EventSeries.MAX_FIELDS + 1)])
    assert backend.keys() == before
    # The widest event allowed round-trips (its hash is written in bounded HSETs).
    most = {f"f{i}": i for i in range(EventSeries.MAX_FIELDS - 1)}
    event_id = series.record(T0 + 4, kind="w", **most)
    assert series.between(T0 + 4, T0 + 4) == [
        {"id": event_id, "timestamp": T0 + 4, "kind": "w", **most}
    ]


def test_record_script_fails_before_its_first_write(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever still makes the script fail (a damaged key, more fields than Lua can unpack at
    once) fails before it writes anything: no meta, no id, no half batch."""

    series = EventSeries(unique(), index=["kind"])
    client = backend.client
    client.set(series.key("seq"), "not a number")
    with pytest.raises(MetricsRefused, match="nothing was written"):
        series.record(T0, kind="a")
    assert backend.keys() == [series.key("seq")]
    client.delete(series.key("seq"))

    series.record(T0, kind="a")
    client.sadd(series.sizes_key, "60")
    client.set(series.cache_key(60), "not a sorted set")
    before = {k: client.dump(k) for k in backend.keys()}
    with pytest.raises(redis.exceptions.ResponseError, match="WRONGTYPE"):
        series.record_many([{"when": T0 + 1, "kind": "b"}, {"when": T0 + 2, "kind": "c"}])
    assert {k: client.dump(k) for k in backend.keys()} == before
    client.delete(series.cache_key(60), series.sizes_key)

    # Past Lua's unpack limit (~8000 values): written in bounded HSETs, no error.
    monkeypatch.setattr(EventSeries, "MAX_FIELDS", 5000)
    wide = {f"f{i}": i for i in range(5000)}
    event_id = series.record(T0 + 3, **wide)
    assert series.between(T0 + 3, T0 + 3) == [{"id": event_id, "timestamp": T0 + 3, **wide}]


@pytest.mark.parametrize(
    "bad",
    [{"k\ud800": "v"}, {"kind": "x\ud800"}, {"note": "\udfff"}],
    ids=["name", "index", "value"],
)
def test_unencodable_text_is_refused_before_any_write(
    backend: Any, monkeypatch: pytest.MonkeyPatch, bad: dict[str, Any]
) -> None:

    monkeypatch.setattr(EventSeries, "MAX_EVENTS_PER_CALL", 2)
    monkeypatch.setattr(EventSeries, "MAX_CALLS_PER_PIPELINE", 1)  # a round trip per two events
    series = EventSeries("sur", index=["kind"])
    good = [{"when": T0 + i, "kind": "ok"} for i in range(4)]
    with pytest.raises(ValueError, match="cannot be encoded as UTF-8"):
        series.record_many([*good, {"when": T0 + 9, **bad}])
    with pytest.raises(ValueError, match="cannot be encoded as UTF-8"):
        series.record(T0, **bad)
    assert backend.keys() == []
    with pytest.raises(ValueError, match="UTF-8"):
        EventSeries("sur", index=["k\ud800"])


def test_reserved_names_are_refused_everywhere(backend: Any) -> None:
    series = EventSeries("res", index=["kind"])
    for name in ("id", "timestamp", "when", "batch"):
        with pytest.raises(ValueError, match="reserved"):
            EventSeries("res", index=[name])
        with pytest.raises(ValueError, match="reserved"):
            series.count_by(name, T0, T0 + 1)
        if name != "when":  # record_many reads "when" as the time
            with pytest.raises(ValueError, match="reserved"):
                series.record_many([{"kind": "a"}, {"kind": "b", name: 1}])
    with pytest.raises(TypeError, match="batch must be a Batch"):
        series.record(kind="a", batch="nightly")  # type: ignore[call-overload]
    assert backend.keys() == []


def test_counts_refuses_too_many_windows(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:

    series = EventSeries("wins")
    for start, end, window in [(0, 1_000_000, 1), (T0, T0 + 86400, 1e-9), (T0, T0 + 1, 1e-300)]:
        with pytest.raises(ValueError, match="at most 100000 are allowed"):
            series.counts(start, end, window)
    assert backend.keys() == []
    monkeypatch.setattr(EventSeries, "MAX_WINDOWS", 50)
    series.record(T0 + 3, kind="a")
    assert series.counts(T0, T0 + 49, 1) == [0, 0, 0, 1] + [0] * 46
    with pytest.raises(ValueError, match="50 are allowed"):
        series.counts(T0, T0 + 50, 1)


def test_counts_caches_a_bounded_number_of_windows(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:

    monkeypatch.setattr(EventSeries, "MAX_CACHED_WINDOWS_PER_CALL", 20)
    monkeypatch.setattr(EventSeries, "MAX_CACHE_ENTRIES", 30)
    series = EventSeries(unique())
    series.record(T0 + 5, kind="a")
    expected = [0] * 5 + [1] + [0] * 15
    assert series.counts(T0, T0 + 20, 1) == expected  # 21 windows: counted, none cached
    assert backend.client.zcard(series.cache_key(1)) == 0
    assert series.counts(T0, below(T0 + 20), 1) == expected[:20]
    assert backend.client.zcard(series.cache_key(1)) == 20
    assert series.counts(T0 + 20, below(T0 + 40), 1) == [0] * 20
    assert backend.client.zcard(series.cache_key(1)) == 30  # full: counted, not cached
    assert series.counts(T0, below(T0 + 20), 1) == expected[:20]


def test_delete_racing_a_recorder_leaves_no_orphan_and_no_merged_event(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record landing right after delete()'s first preen script call: afterwards the series
    is either gone or a whole new series; a later event never inherits another's fields."""
    from django_redis_metrics.core.scripts import LuaScript

    series = EventSeries(unique(), index=["k"])
    series.record(T0 + 1, k="a", secret="old")
    original = LuaScript.__call__
    raced: list[int] = []

    def call(self: LuaScript, client: Any, keys: Any, args: Any = ()) -> Any:
        reply = original(self, client, keys, args)
        if self.name == "events_preen" and not raced:
            raced.append(EventSeries(series.name, index=["k"]).record(T0 + 2, k="b", secret="x"))
        return reply

    monkeypatch.setattr(LuaScript, "__call__", call)
    series.delete()
    monkeypatch.setattr(LuaScript, "__call__", original)
    assert raced
    left = series.between(T0 - 1, T0 + 100)
    keys = _series_keys(backend, series)
    # No orphan: every event hash and per-value entry belongs to an event in the time index.
    assert {k for k in keys if ":e:" in k} == {series.event_key(e["id"]) for e in left}
    by = {k for k in keys if ":by:" in k}
    assert by == {series.index_key("k", e["k"]) for e in left}
    later = series.record(T0 + 3, k="c")
    assert series.between(T0 + 3, T0 + 3) == [{"id": later, "timestamp": T0 + 3, "k": "c"}]
    assert all(e["id"] != later for e in left)
    series.delete()
    assert _series_keys(backend, series) == set()
    assert EventSeries.objects.names() == []


def test_preen_removes_old_cached_windows_in_bounded_steps(
    backend: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from django_redis_metrics.core.scripts import LuaScript

    monkeypatch.setattr(EventSeries, "PREEN_CACHE_BATCH", 10)
    monkeypatch.setattr(EventSeries, "PRUNE_PER_WRITE", 0)  # preen, not the record, prunes
    series = EventSeries(unique(), retention=10)
    series.record(T0, kind="a")
    series.record(T0 + 500, kind="b")
    assert series.counts(T0, below(T0 + 100), 1) == [1] + [0] * 99  # 300 closed windows cached
    assert series.counts(T0 + 400, below(T0 + 600), 1) == [0] * 100 + [1] + [0] * 99
    cache = series.cache_key(1)
    sizes: list[int] = [backend.client.zcard(cache)]
    original = LuaScript.__call__

    def call(self: LuaScript, client: Any, keys: Any, args: Any = ()) -> Any:
        reply = original(self, client, keys, args)
        if self.name == "events_preen":
            sizes.append(backend.client.zcard(cache))
        return reply

    monkeypatch.setattr(LuaScript, "__call__", call)
    assert series.preen(T0 + 460) == 1  # cutoff T0 + 450
    steps = [a - b for a, b in itertools.pairwise(sizes)]
    assert sizes[0] == 300 and sizes[-1] == 150 and max(steps) <= 11 and len(steps) >= 15
    starts = [s for _, s in backend.client.zrange(cache, 0, -1, withscores=True)]
    assert starts == [T0 + 449 + i for i in range(1, 151)]  # nothing wholly before the cutoff
    assert series.counts(T0 + 450, T0 + 599, 1) == [0] * 50 + [1] + [0] * 99
    with pytest.raises(ValueError, match="batch_size"):
        series.preen(T0, batch_size=10**6)
