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
