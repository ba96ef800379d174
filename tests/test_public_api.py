from django_redis_metrics import Counter


def test_incr_and_series(backend):
    hits = Counter("hits", precisions=[1, 60], samples=5)
    hits.incr(when=120.5)
    hits.incr(3, when=121)
    assert hits.series(1) == [(120, 1), (121, 3)]
    assert hits.series(60) == [(120, 4)]
    assert Counter.objects.names() == ["hits"]
