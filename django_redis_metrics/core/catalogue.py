"""Catalogues: one sorted set per kind of metric listing every metric that holds data.

On a single node the models write the catalogue inside their own Lua scripts. On Redis Cluster
the catalogue lives in another slot, so it is written by separate commands, and only while a
metric's script reports that its meta hash lacks the ``listed`` flag: one extra round trip per
metric's lifetime, and a writer that dies before listing leaves the next write to list it.
Removal follows a remove-then-recheck protocol so that a racing writer never ends up unlisted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from .connection import AnyRedisClient, RedisClient, get_redis_connection, is_cluster
from .keys import catalogue_key, metric_key, to_str, validate_name
from .labelling import split
from .scripts import script
from .steps import Op, Script, Steps

PAGE = 500
#: Field of a metric's meta hash set once the metric is known to be in the catalogue.
LISTED = "listed"


def register(client: RedisClient, kind: str, name: str) -> None:
    client.zadd(catalogue_key(kind), {name: 0})


def register_steps(kind: str, name: str) -> Steps[None]:
    """:func:`register` as steps."""
    yield Op("zadd", catalogue_key(kind), {name: 0})


def listing_steps(kind: str, name: str, meta_key: str) -> Steps[None]:
    """List ``name``, then flag its meta hash (if still there) so its writes stop asking (a
    cluster write's follow-up)."""
    yield from register_steps(kind, name)
    yield Script(script("catalogue_confirm"), [meta_key])


def unregister(client: RedisClient, kind: str, name: str, marker_key: str) -> bool:
    """Remove ``name``, then re-add it if ``marker_key`` (written by every write) exists again.

    A writer writes the marker before it registers, so whichever order the two interleave in,
    a metric that holds data stays listed. Returns True if the name stayed removed.
    """
    client.zrem(catalogue_key(kind), name)
    if client.exists(marker_key):
        register(client, kind, name)
        return False
    return True


def unregister_many(client: RedisClient, kind: str, names: Sequence[str]) -> list[str]:
    """:func:`unregister` for many names in at most three round trips: remove them all, then
    re-add those whose meta hash (the marker every write writes) exists again. Returns the
    names that stayed removed."""
    if not names:
        return []
    key = catalogue_key(kind)
    client.zrem(key, *names)
    pipe = client.pipeline(transaction=False)
    for name in names:
        pipe.exists(metric_key(kind, name, "meta"))
    back = {name for name, exists in zip(names, pipe.execute(), strict=True) if int(exists)}
    if back:
        client.zadd(key, dict.fromkeys(back, 0))
    return [name for name in names if name not in back]


def pages(client: RedisClient, kind: str, page: int = PAGE) -> Iterator[list[str]]:
    """Every name in the catalogue, ``page`` names at a time in name order (safe while it
    changes: a page starts after the last name of the one before)."""
    key = catalogue_key(kind)
    start = "-"
    while True:
        chunk = [to_str(raw) for raw in client.zrangebylex(key, start, "+", start=0, num=page)]
        if chunk:
            yield chunk
        if len(chunk) < page:
            return
        start = "(" + chunk[-1]


def names(
    client: RedisClient, kind: str, page: int = PAGE, *, forget: bool = True
) -> Iterator[str]:
    """Every name in the catalogue, in name order, fetched in pages (safe while it changes).

    Only metrics that still exist are given: a metric nobody wrote for its whole retention has
    lost its keys to their TTLs, its meta hash (the marker every write writes) included, and
    is forgotten here (``unregister_many``, race-free) unless ``forget`` is false (dry runs).
    One pipelined ``EXISTS`` per page.
    """
    for chunk in pages(client, kind, page):
        pipe = client.pipeline(transaction=False)
        for name in chunk:
            pipe.exists(metric_key(kind, name, "meta"))
        found = [int(exists) for exists in pipe.execute()]
        gone = [name for name, exists in zip(chunk, found, strict=True) if not exists]
        left = set(unregister_many(client, kind, gone) if forget else gone)
        yield from (name for name in chunk if name not in left)


def inline_catalogue(client: AnyRedisClient) -> bool:
    """Whether scripts may write the catalogue themselves (all keys on one server)."""
    return not is_cluster(client)


class CataloguedMetric(Protocol):
    """What a model gives :class:`MetricManager`: its kind, a label, and a way to rebuild an
    instance from its stored meta hash (``LookupError`` when the hash holds no configuration)."""

    KIND: ClassVar[str]
    LABEL: ClassVar[str]

    def __init__(self, name: str) -> None: ...

    @classmethod
    def from_meta(cls, name: str, meta: Mapping[Any, Any]) -> Self: ...

    def series_for(self, pairs: tuple[tuple[str, str], ...], *, other: bool = False) -> Self: ...


M = TypeVar("M", bound=CataloguedMetric)


class MetricManager(Generic[M]):
    """``Model.objects``: the metrics of one kind that the catalogue lists."""

    model: type[M]

    def __set_name__(self, owner: type[M], name: str) -> None:
        self.model = owner

    def names(self) -> list[str]:
        return list(names(get_redis_connection(), self.model.KIND))

    def all(self) -> list[M]:
        """Every listed metric, configured as its writers last stored it (one round trip)."""
        return self.many(self.names())

    def many(self, names: Sequence[str]) -> list[M]:
        """The metrics ``names``, configured as their writers last stored them (one round
        trip); a name without stored configuration gets the defaults."""
        if not names:
            return []
        pipe = get_redis_connection().pipeline(transaction=False)
        for name in names:
            pipe.hgetall(metric_key(self.model.KIND, name, "meta"))
        return [self._build(name, meta) for name, meta in zip(names, pipe.execute(), strict=True)]

    def get(self, name: str) -> M:
        """The metric ``name`` as stored; ``LookupError`` if nothing was ever written to it."""
        validate_name(name, f"{self.model.LABEL} name")
        meta = get_redis_connection().hgetall(metric_key(self.model.KIND, name, "meta"))
        try:
            return self.model.from_meta(name, meta)
        except LookupError:
            raise LookupError(f"No {self.model.LABEL} named {name!r} holds data.") from None

    def _build(self, name: str, meta: Mapping[Any, Any]) -> M:
        parsed = split(name)
        if parsed.is_series:  # a labelled metric's series: its metric, configured as it is
            family = self._build(parsed.name, meta)
            return family.series_for(parsed.labels, other=parsed.other)
        try:
            return self.model.from_meta(name, meta)
        except LookupError:  # listed, but retired or never configured meanwhile: defaults
            return self.model(name)
