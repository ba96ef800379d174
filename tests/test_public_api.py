from django_redis_metrics import Counter


def test_incr_and_series(backend):
    hits = Counter("hits", precisions=[1, 60], samples=5)
    hits.incr(when=120.5)
    hits.incr(3, when=121)
    assert hits.series(1) == [(120, 1), (121, 3)]
    assert hits.series(60) == [(120, 4)]
    assert Counter.objects.names() == ["hits"]


def test_unique_estimate(backend):
    import time

    from django_redis_metrics import UniqueEstimate

    visitors = UniqueEstimate("visitors", periods=("day", "week", "month"))
    for item in ("a", 2, "2", "b"):
        visitors.add(item, when=None)
    assert visitors.count("day") == 3
    assert visitors.count("week", when=None) == 3
    assert visitors.between(time.time() - 86400 * 3, time.time()).count() == 3
    assert UniqueEstimate.objects.names() == ["visitors"]


def test_statistic_and_gauge(backend):
    import django_redis_metrics
    from django_redis_metrics import Gauge, Statistic

    assert {"Statistic", "Gauge"} <= set(django_redis_metrics.__all__)
    latency = Statistic("latency", precisions=[60, 3600], samples=5)
    latency.record(10, when=120.5)
    latency.record(30.0, when=130)
    summary = latency.summary(60, when=120)
    assert (summary["count"], summary["sum"], summary["min"], summary["max"]) == (2, 40, 10, 30)
    assert summary["mean"] == 20 and round(summary["stddev"], 6) == round(200**0.5, 6)
    assert [start for start, _ in latency.series(3600)] == [0]
    assert [s["count"] for _, s in latency.recent(60, 2, until=180)] == [2, 0]
    with latency.time():
        pass
    level = Gauge("level", precisions=[60], samples=5)
    level.set(3, when=100)
    level.set(1, when=90)
    assert level.get() == 3
    assert level.series(60) == [(60, {"last": 3, "min": 1, "max": 3})]
    assert Statistic.objects.names() == ["latency"] and Gauge.objects.names() == ["level"]


def test_public_exceptions_are_exported_from_one_module():
    import django_redis_metrics
    from django_redis_metrics import MetricsRefused, NoDayKeys, exceptions
    from django_redis_metrics.core.cover import NoDayKeys as old_no_day_keys
    from django_redis_metrics.core.scripts import MetricsRefused as old_refused

    assert {"MetricsRefused", "NoDayKeys"} <= set(django_redis_metrics.__all__)
    assert set(exceptions.__all__) <= set(django_redis_metrics.__all__)
    assert (old_refused, old_no_day_keys) == (MetricsRefused, NoDayKeys)  # old imports work
    for error in (MetricsRefused, NoDayKeys):
        assert error.__module__ == "django_redis_metrics.exceptions"
        assert issubclass(error, ValueError)
    from redis.exceptions import ConnectionError as RedisConnectionError

    from django_redis_metrics import AsyncPoolTimeout

    assert issubclass(AsyncPoolTimeout, RedisConnectionError)  # Redis trouble, handled as such


def test_every_exception_class_of_the_package_lives_in_exceptions_py():
    import ast
    from pathlib import Path

    package = Path(__file__).resolve().parent.parent / "django_redis_metrics"
    defined = {}
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                ast.unparse(base).split(".")[-1].endswith(("Error", "Exception", "Refused"))
                for base in node.bases
            ):
                defined[node.name] = path.name
    assert defined == {
        "AsyncPoolTimeout": "exceptions.py",
        "MetricDoesNotExist": "exceptions.py",
        "MetricsRefused": "exceptions.py",
        "MissingPermission": "exceptions.py",
        "NoDayKeys": "exceptions.py",
        "NotReplicated": "exceptions.py",
        "PortTaken": "exceptions.py",
    }


def test_a_refused_write_raises_the_exported_exception(backend):
    import pytest

    from django_redis_metrics import Counter, MetricsRefused

    with pytest.raises(MetricsRefused):
        Counter("far_ahead").incr(when=4_000_000_000)  # far ahead of the Redis clock


def test_alerts_and_their_signals():
    import django_redis_metrics
    from django_redis_metrics import Alert, Counter
    from django_redis_metrics.signals import alert_fired, alert_resolved

    assert "Alert" in django_redis_metrics.__all__
    hits = Counter("hits", labels=("view", "status"))
    errors = hits.labels(view="home", status="5xx")
    alert = Alert("5xx spike", errors, above=10, over=300, for_=120)
    assert (alert.name, alert.above, alert.over, alert.for_) == ("5xx spike", 10, 300, 120)
    assert alert_fired is not alert_resolved


def test_annotations(backend):
    import time

    import django_redis_metrics
    from django_redis_metrics import annotate, annotations

    assert {"annotate", "annotations", "aannotate", "aannotations"} <= set(
        django_redis_metrics.__all__
    )
    now = time.time()
    annotate("Deploy v1.4", when=now - 10, tags=("deploy",))
    annotate("Note", when=now - 5)
    assert annotations(now - 60, now, tags=["deploy"]) == [
        {"when": now - 10, "text": "Deploy v1.4", "tags": ["deploy"]}
    ]
    assert [a["text"] for a in annotations(now - 60, now)] == ["Deploy v1.4", "Note"]


def test_funnel_and_two_bitmap_cohort(backend):
    import time

    import django_redis_metrics
    from django_redis_metrics import EventSeries, Funnel, UniqueBitmap

    assert "Funnel" in django_redis_metrics.__all__
    now = time.time()
    visited, carted, bought = (UniqueBitmap(n) for n in ("visited", "carted", "bought"))
    for user in (1, 2, 3, 4):
        visited.mark(user, now)
    for user in (2, 3, 9):
        carted.mark(user, now)
    bought.mark(3, now)
    checkout = Funnel(steps=[visited, carted, bought])
    assert checkout.counts("day", when=now) == [4, 2, 1]
    assert checkout.between(now - 86400, now).counts() == [4, 2, 1]
    assert visited.cohort("day", start=now, periods=1, returning=bought) == [[4]]
    orders = EventSeries("orders", index=["type"])
    for kind, at in (("view", 0), ("cart", 10), ("buy", 20)):
        orders.record(when=now - 100 + at, type=kind, user=7)
    ordered = Funnel.ordered(
        orders,
        steps=[{"type": "view"}, {"type": "cart"}, {"type": "buy"}],
        user="user",
        within=86400,
    )
    assert ordered.counts(now - 200, now) == [1, 1, 1]
