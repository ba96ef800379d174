"""Catalogues on Redis Cluster, where listing a metric is a second command: a writer that dies
in between never leaves a metric unlisted for good, and listed metrics cost one round trip."""

from __future__ import annotations

import pytest

from django_redis_metrics import Counter, EventSeries, UniqueBitmap
from django_redis_metrics.core import catalogue

T0 = 1_700_000_040

WRITES = {
    "counter": (lambda: Counter("orphan", precisions=[60]).incr(when=T0), Counter),
    "events": (lambda: EventSeries("orphan").record(when=T0, kind="a"), EventSeries),
    "bitmap": (lambda: UniqueBitmap("orphan").mark(7, when=T0), UniqueBitmap),
}


@pytest.mark.parametrize("kind", sorted(WRITES))
def test_a_writer_dying_before_listing_leaves_the_next_write_to_list(cluster, monkeypatch, kind):
    write, model = WRITES[kind]

    def dies(*args, **kwargs):
        raise ConnectionError("the process died here")

    with monkeypatch.context() as patch:
        patch.setattr(catalogue, "register_steps", dies)
        with pytest.raises(ConnectionError):
            write()
    assert model.objects.names() == []
    write()
    assert model.objects.names() == ["orphan"]


@pytest.mark.parametrize("kind", sorted(WRITES))
def test_single_node_scripts_list_metrics_themselves(single, monkeypatch, kind):
    write, model = WRITES[kind]

    def never(*args, **kwargs):
        raise AssertionError("a single node lists metrics inside the write script")

    monkeypatch.setattr(catalogue, "register_steps", never)
    write()
    assert model.objects.names() == ["orphan"]
