"""Catalogues: one sorted set per kind of metric listing every metric that holds data.

On a single node the models write the catalogue inside their own Lua scripts. On Redis Cluster
the catalogue lives in another slot, so it is written by separate commands, and only while a
metric's script reports that its meta hash lacks the ``listed`` flag: one extra round trip per
metric's lifetime, and a writer that dies before listing leaves the next write to list it.
Removal follows a remove-then-recheck protocol so that a racing writer never ends up unlisted.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from ..exceptions import MetricDoesNotExist, MultipleMetricsReturned
from .connection import AnyRedisClient, RedisClient, get_redis_connection, is_cluster
from .drive import adrive, drive
from .keys import catalogue_key, metric_key, to_str, validate_name
from .labels.labelling import SEPARATOR, label_value, series_range, split, validate_label_names
from .queries import declared
from .queries.measures import Grouped
from .queries.queryset import MetricQuerySet
from .queries.selection import Builder
from .scripts import script
from .shards import SHARD_LABEL
from .steps import Op, Pipe, Script, Steps

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


def validate_member(name: object, what: str = "metric name") -> str:
    """``name`` if it can be a catalogue member: a metric's name, or a series' (its metric's
    name and its labels, ``core/labels/labelling.py``); else a ``TypeError``/``ValueError``."""
    if not isinstance(name, str) or SEPARATOR not in name:
        return validate_name(name, what)
    found = split(name)
    validate_name(found.name, what)
    for label, value in found.labels:
        if label != SHARD_LABEL:  # a shard of a sharded metric (``core/shards.py``)
            validate_label_names((label,), f"the series {name!r}")
        label_value(value, label)
    return name


def inline_catalogue(client: AnyRedisClient) -> bool:
    """Whether scripts may write the catalogue themselves (all keys on one server)."""
    return not is_cluster(client)


class CataloguedMetric(Protocol):
    """What a model gives :class:`MetricManager`: its kind, a label, and a way to rebuild an
    instance from its stored meta hash (``LookupError`` when the hash holds no configuration);
    the manager gives it ``DoesNotExist`` and ``MultipleObjectsReturned``."""

    KIND: ClassVar[str]
    LABEL: ClassVar[str]
    DoesNotExist: ClassVar[type[MetricDoesNotExist]]
    MultipleObjectsReturned: ClassVar[type[MultipleMetricsReturned]]
    name: str

    def __init__(self, name: str) -> None: ...

    @classmethod
    def from_meta(cls, name: str, meta: Mapping[Any, Any]) -> Self: ...

    def delete(self) -> None: ...

    def series_for(self, pairs: tuple[tuple[str, str], ...], *, other: bool = False) -> Self: ...


M = TypeVar("M", bound=CataloguedMetric)


def _exceptions(owner: type[Any]) -> None:
    """Give ``owner`` its own ``DoesNotExist`` and ``MultipleObjectsReturned``, as Django
    gives each model (a subclass inherits its parent's unless it has a manager of its own)."""
    for attribute, base in (
        ("DoesNotExist", MetricDoesNotExist),
        ("MultipleObjectsReturned", MultipleMetricsReturned),
    ):
        error = type(
            attribute,
            (base,),
            {
                "__module__": owner.__module__,
                "__qualname__": f"{owner.__qualname__}.{attribute}",
                "__doc__": f"{base.__doc__.split(':')[0] if base.__doc__ else attribute}: "
                f"{owner.__name__}.",
            },
        )
        setattr(owner, attribute, error)


class MetricManager(Generic[M]):
    """``Model.objects``: the metrics of one kind that the catalogue lists.

    ``names()``, ``all()`` and ``many()`` give lists, as they always did (``names()`` and
    ``all()`` forget listed metrics whose keys all expired); ``filter()``, ``exclude()``,
    ``order_by()`` and the rest give a lazy queryset (``core/queries/queryset.py``) of catalogue
    members and declared metrics, as Django's ``QuerySet``.
    """

    model: type[M]

    def __set_name__(self, owner: type[M], name: str) -> None:
        self.model = owner
        _exceptions(owner)

    def names(self) -> list[str]:
        return list(names(get_redis_connection(), self.model.KIND))

    def all(self) -> list[M]:
        """Every listed metric, configured as its writers last stored it (one round trip)."""
        return self.many(self.names())

    def many(self, names: Sequence[str]) -> list[M]:
        """The metrics ``names`` (or series), configured as their writers last stored them (one
        round trip); a name without stored configuration gets the defaults."""
        if not names:
            return []
        pipe = get_redis_connection().pipeline(transaction=False)
        for name in names:
            pipe.hgetall(metric_key(self.model.KIND, name, "meta"))
        builder = Builder(self.model)
        return [builder.build(name, meta) for name, meta in zip(names, pipe.execute(), strict=True)]

    def get(self, name: str | None = None, /, **lookups: object) -> M:
        """``get(name)``: the metric ``name`` as stored (or as declared in a ``metrics.py``);
        ``get(**lookups)``: the one row of ``filter(**lookups)``. ``Model.DoesNotExist`` (a
        ``LookupError``) or ``Model.MultipleObjectsReturned`` otherwise."""
        if name is None:
            return self.get_queryset().get(**lookups)
        if lookups:
            raise TypeError("get() takes a name or lookups, not both.")
        return drive(self._named_steps(name))

    async def aget(self, name: str | None = None, /, **lookups: object) -> M:
        """``get()`` awaited."""
        if name is None:
            return await self.get_queryset().aget(**lookups)
        if lookups:
            raise TypeError("aget() takes a name or lookups, not both.")
        return await adrive(self._named_steps(name))

    def _named_steps(self, name: str) -> Steps[M]:
        """The metric (or series) ``name``: from its meta hash; else, for a labelled metric,
        itself as declared or as its first series says. One round trip (its meta hash and its
        first series asked together), two for a labelled metric not declared."""
        validate_member(name, f"{self.model.LABEL} name")
        kind = self.model.KIND
        if SEPARATOR in name:  # a series
            meta = yield Op("hgetall", metric_key(kind, name, "meta"))
            if not meta:
                raise self.model.DoesNotExist(f"No {self.model.LABEL} series {name!r} holds data.")
            return Builder(self.model).build(name, meta)
        low, high = series_range(name)
        meta, first = yield Pipe(
            [
                Op("hgetall", metric_key(kind, name, "meta")),
                Op("zrangebylex", catalogue_key(kind), low, high, start=0, num=1),
            ]
        )
        try:
            return self.model.from_meta(name, meta)
        except LookupError:
            pass
        found = declared.declared(kind).get(name)
        if found is not None:
            return found  # type: ignore[return-value]
        if first:
            member = to_str(first[0])
            series_meta = yield Op("hgetall", metric_key(kind, member, "meta"))
            family = getattr(Builder(self.model).build(member, series_meta), "family", None)
            if family is not None:
                return family  # type: ignore[no-any-return]
        raise self.model.DoesNotExist(f"No {self.model.LABEL} named {name!r} holds data.")

    # Querysets (core/queries/queryset.py)

    def get_queryset(self) -> MetricQuerySet[M]:
        """Every row: catalogue members and declared metrics holding no data, by name."""
        return MetricQuerySet(self.model)

    def filter(self, **lookups: object) -> MetricQuerySet[M]:
        return self.get_queryset().filter(**lookups)

    def exclude(self, **lookups: object) -> MetricQuerySet[M]:
        return self.get_queryset().exclude(**lookups)

    def order_by(self, *fields: str) -> MetricQuerySet[M]:
        return self.get_queryset().order_by(*fields)

    def count(self) -> int:
        return self.get_queryset().count()

    async def acount(self) -> int:
        return await self.get_queryset().acount()

    def exists(self) -> bool:
        return self.get_queryset().exists()

    async def aexists(self) -> bool:
        return await self.get_queryset().aexists()

    def first(self) -> M | None:
        return self.get_queryset().first()

    async def afirst(self) -> M | None:
        return await self.get_queryset().afirst()

    def delete(self) -> int:
        return self.get_queryset().delete()

    def __getitem__(self, key: slice) -> MetricQuerySet[M]:
        return self.get_queryset()[key]

    def __aiter__(self) -> AsyncIterator[M]:
        return self.get_queryset().__aiter__()

    def group_by(self, *labels: str) -> Grouped:
        return self.get_queryset().group_by(*labels)

    def total(self, precision: int | None = None) -> Any:
        return self.get_queryset().total(precision)

    def series(self, precision: int) -> list[tuple[int, Any]]:
        return self.get_queryset().series(precision)
