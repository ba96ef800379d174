"""A node of a bitmap query that is no period union nor operation (a subclass of
``BitmapQuery`` of the site's own) is refused by name, not evaluated as something else."""

from __future__ import annotations

from typing import Any

import pytest

from django_redis_metrics import UniqueBitmap
from django_redis_metrics.bitmaps.query import BitmapQuery, PeriodUnion


class Stray(BitmapQuery):
    """A query node of the site's own, over a real query's keys."""

    def __init__(self, inner: BitmapQuery) -> None:
        self.inner = inner

    def leaves(self) -> list[PeriodUnion]:
        return self.inner.leaves()


def test_a_node_of_an_unknown_type_is_refused_when_counted_or_asked(backend: Any) -> None:
    visitors = UniqueBitmap("visitors", periods=("day",))
    visitors.mark(7)
    stray = Stray(visitors.day())
    with pytest.raises(TypeError, match="Not a bitmap query"):
        stray.count()
    with pytest.raises(TypeError, match="Not a bitmap query"):
        7 in stray  # noqa: B015
    with pytest.raises(TypeError, match="Not a bitmap query"):
        (visitors.day() | stray).count()
