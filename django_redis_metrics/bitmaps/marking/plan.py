"""A mark's script call, planned without I/O: the ``bitmap_mark.lua`` calls that set users' bits.

A mark usually costs Redis one SETBIT per period and nothing else (its fast path, as cheap as
bitmapist's ``mark_event``), because this module tells the script when nothing needs checking:

- the bitmap's meta hash and catalogue entry were confirmed by an earlier mark of this process
  (and the script still sees every period key, so no period is new: a new period is indexed,
  given its expiry and its meta refreshed on the slow path);
- the PREFIX's kind of user ids was confirmed by an earlier mark of this process;
- by this process's clock, no mark is stamped ahead of it and no period ends within
  ``MAX_AHEAD`` seconds, so neither the ahead refusal, nor a period that is over (its cached
  unions made stale), nor a retention that is over can apply: only then may the script skip
  reading the Redis clock. A clock skew of over ``CACHE_GRACE + MAX_AHEAD`` between the site's
  servers could let a cached union miss a late mark; skews that large are refused elsewhere.

Everything else takes the slow path, which checks it all by the Redis clock as before. Kept free
of I/O so that the sync and async APIs plan their marks the same way.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import tzinfo

from django.conf import settings

from ...conf import conf
from ...core.batch import ScriptCall
from ...core.keys import catalogue_key, metric_key
from ...core.periods import Period, get_zone, period_class
from ...core.retention import MAX_AHEAD
from ...core.timeutil import When, to_timestamp
from ..ids import id_kind_key, id_map_keys, normalize_id
from ..keys import KIND
from ..retention import period_bounds, retention


@dataclass(frozen=True, slots=True)
class MarkSettings:
    """The settings a mark reads, derived once per value of ``DJANGO_REDIS_METRICS`` (and of
    Django's ``TIME_ZONE``, its fallback): a mark reads Django's settings twice, not ten times."""

    raw: Mapping[str, object]
    django_zone: object
    keep_source: Callable[[], Mapping[str, int]]
    prefix: str
    highest: int
    zone: tzinfo
    keep: Mapping[str, int]
    generation_ttl: int
    catalogue: str


_settings: list[MarkSettings] = []


def generation_ttl_ms() -> int:
    """A generation outlives every union cached under the one before it."""
    return (max(conf.BITMAP_CACHE_TTL, 86400) + 60) * 1000


def mark_settings(
    keep_source: Callable[[], Mapping[str, int]] = retention,
) -> MarkSettings:
    """The settings of a mark now (recomputed whenever the settings object changes);
    ``keep_source`` gives the periods kept (``BITMAP_RETENTION``)."""
    raw, django_zone = conf.raw, getattr(settings, "TIME_ZONE", None)
    if _settings:
        last = _settings[0]
        if last.raw is raw and last.django_zone == django_zone and last.keep_source is keep_source:
            return last
    current = MarkSettings(
        raw,
        django_zone,
        keep_source,
        conf.PREFIX,
        conf.MAX_USER_ID,
        get_zone(),
        keep_source(),
        generation_ttl_ms(),
        catalogue_key(KIND),
    )
    _settings[:] = [current]
    return current


#: Bitmaps (server, meta key, periods) whose meta and listing this process saw confirmed;
#: bounded, as a cache: forgetting one costs one slow-path mark.
CONFIRMED_SIZE = 10_000


@dataclass(frozen=True, slots=True)
class PeriodsPlan:
    """What marks into one set of periods send, made once per set (marks come in time order)."""

    periods: tuple[Period, ...]
    #: Instants in ``[low, high)`` fall in these very periods.
    low: float
    high: float
    #: The meta hash, the generation, the period keys and their index keys.
    keys: tuple[str, ...]
    #: Per period: "suffix start end expires oldest", as the script reads it.
    bounds: tuple[str, ...]
    keep: Mapping[str, int]
    #: The period keys alone (a mark's fast path writes nothing else).
    period_keys: tuple[str, ...]
    #: The packed slow-path arguments of this plan, per bitmap configuration (``slow_args``).
    packed: dict[tuple[bool, bool, str, int, str], str] = field(default_factory=dict)


def plan_periods(base: str, periods: Sequence[Period], keep: Mapping[str, int]) -> PeriodsPlan:
    """The plan of marks into ``periods`` of the bitmap whose keys start with ``base``."""
    bounds = []
    for period in periods:
        expires, oldest = period_bounds(period, keep[period.name])
        bounds.append(
            f"{period.suffix} {int(period.start_ts)} {period.end_ts!r} {expires} {int(oldest)}"
        )
    keys = (
        f"{base}:meta",
        f"{base}:gen",
        *(f"{base}:{p.name}:{p.suffix}" for p in periods),
        *(f"{base}:index:{p.name}" for p in periods),
    )
    return PeriodsPlan(
        tuple(periods),
        max(p.start_ts for p in periods),
        min(p.end_ts for p in periods),
        keys,
        tuple(bounds),
        keep,
        keys[2 : 2 + len(periods)],
    )


#: The plan each bitmap last used, per (key base, periods, zone).
_last_plans: dict[tuple[str, tuple[str, ...], tzinfo], PeriodsPlan] = {}
#: The period each kind last resolved to, per zone.
_last_periods: dict[tuple[str, tzinfo], Period] = {}


def containing(name: str, timestamp: float, zone: tzinfo) -> Period:
    """``period_class(name).containing(timestamp, zone)``, reusing the last answer while
    ``timestamp`` still falls inside it (exact: a period knows its own bounds)."""
    last = _last_periods.get((name, zone))
    if last is not None and last.start_ts <= timestamp < last.end_ts:
        return last
    period = _last_periods[(name, zone)] = period_class(name).containing(timestamp, zone)
    return period


def plan_for(
    base: str, names: tuple[str, ...], timestamp: float, zone: tzinfo, keep: Mapping[str, int]
) -> PeriodsPlan:
    """The plan of a mark at ``timestamp`` into the periods ``names`` (cached while valid)."""
    cache_key = (base, names, zone)
    plan = _last_plans.get(cache_key)
    if plan is not None and plan.low <= timestamp < plan.high and plan.keep is keep:
        return plan
    periods = [containing(name, timestamp, zone) for name in names]
    plan = _last_plans[cache_key] = plan_periods(base, periods, keep)
    return plan


def needs_checks(plan: PeriodsPlan, latest: float, now: float | None = None) -> bool:
    """Whether, by this process's clock, the script must read the Redis clock: a mark stamped
    ahead of ``now``, or a period that ends within ``MAX_AHEAD`` seconds of it (or ended)."""
    now = time.time() if now is None else now
    return latest > now or plan.high <= now + MAX_AHEAD


@dataclass(slots=True)
class MarkGroup:
    """Marks falling in the same periods: their plan, their user ids, their latest time."""

    plan: PeriodsPlan
    values: list[int | str]
    latest: float


def group_marks(
    base: str,
    names: tuple[str, ...],
    marks: Iterable[tuple[object, When]],
    zone: tzinfo,
    keep: Mapping[str, int],
) -> tuple[list[MarkGroup], str]:
    """``marks`` validated whole (``TypeError``/``ValueError`` before anything is sent) and
    grouped by the periods they fall in; with the kind of their ids, "int" or "mapped"."""
    groups: dict[tuple[str, ...], MarkGroup] = {}
    kinds: set[type] = set()
    for item in marks:
        if not isinstance(item, tuple) or len(item) != 2:
            raise TypeError(f"mark_many expects (user_id, when) pairs, not {item!r}.")
        value = normalize_id(item[0])
        timestamp = to_timestamp(item[1])
        kinds.add(type(value))
        plan = plan_for(base, names, timestamp, zone, keep)
        group = groups.get(plan.keys)
        if group is None:
            groups[plan.keys] = MarkGroup(plan, [value], timestamp)
        else:
            group.values.append(value)
            group.latest = max(group.latest, timestamp)
    if len(kinds) > 1:
        raise ValueError(
            "mark_many takes one kind of user id: integer ids (bit offsets) or str/UUID ids "
            "(mapped), not both, as one PREFIX holds one kind."
        )
    return list(groups.values()), "mapped" if str in kinds else "int"


class Confirmed:
    """Bitmaps whose meta hash and catalogue entry a mark of this process saw in place.

    No lock (a set's own operations are atomic, and a fact lost to a race only costs one
    slow-path mark), so nothing here can be held across a fork."""

    def __init__(self, size: int = CONFIRMED_SIZE) -> None:
        self.size = size
        self._seen: set[tuple[str, str, str]] = set()

    def __contains__(self, fact: tuple[str, str, str]) -> bool:
        return fact in self._seen

    def add(self, fact: tuple[str, str, str]) -> None:
        if len(self._seen) >= self.size:
            self._seen.clear()
        self._seen.add(fact)

    def discard(self, fact: tuple[str, str, str]) -> None:
        self._seen.discard(fact)

    def clear(self) -> None:
        self._seen.clear()


confirmed = Confirmed()


def slow_args(
    plan: PeriodsPlan,
    *,
    inline: bool,
    mapped: bool,
    periods_csv: str,
    generation_ttl: int,
    kind: str,
) -> str:
    """What only the script's slow path reads, packed in one argument (see its header): the
    fast path then pays for 6 arguments, not 11 + one per period."""
    cache_key = (inline, mapped, periods_csv, generation_ttl, kind)
    packed = plan.packed.get(cache_key)
    if packed is None:
        flags = f"{int(inline)} {int(mapped)} {generation_ttl} {kind or '-'} {MAX_AHEAD}"
        head = f"{flags} {periods_csv}"
        packed = plan.packed[cache_key] = "\n".join((head, *plan.bounds))
    return packed


def mark_args(
    plan: PeriodsPlan,
    offsets: Sequence[int | str],
    *,
    fast: bool,
    name: str,
    inline: bool,
    mapped: bool,
    periods_csv: str,
    generation_ttl: int,
    kind: str,
    latest: float,
    catalogue: str,
) -> tuple[list[str], list[str | int | float]]:
    """The keys and arguments of one ``bitmap_mark`` call (see the script's header)."""
    keys = list(plan.keys)
    if inline:  # the catalogue, and the kind key when the script checks the kind
        keys.append(catalogue)
        if kind:
            keys.append(id_kind_key())
    elif kind:
        raise ValueError("On Redis Cluster the id kind is checked before the mark.")
    if mapped:
        keys += id_map_keys()
    packed = slow_args(
        plan,
        inline=inline,
        mapped=mapped,
        periods_csv=periods_csv,
        generation_ttl=generation_ttl,
        kind=kind,
    )
    args: list[str | int | float] = [
        "1" if fast else "0",
        len(offsets),
        len(plan.periods),
        repr(latest),
        packed,
        name,
        *offsets,
    ]
    return keys, args


@dataclass
class MarkCall(ScriptCall):
    """A ``bitmap_mark`` call, which later marks queued on the same batch may join."""

    #: Marks with equal values share one call: the fast path offered, the same keys (same
    #: bitmap, periods, server and configuration); ``None``: nothing may join.
    joinable: tuple[object, ...] | None = None
    latest: float = 0.0


#: How many of a batch's last calls a mark looks through for one to join.
JOIN_LOOKBACK = 8


def join(calls: list[ScriptCall], call: MarkCall, most: int) -> bool:
    """Add ``call``'s one user to a recent call of ``calls`` it may join (at most ``most``
    users per call); whether it did. The joined call stays atomic, and a mark joins only a call
    that runs exactly the checks it would have run alone, so neither can fail for the other."""
    if call.joinable is None:
        return False
    for earlier in reversed(calls[-JOIN_LOOKBACK:]):
        if not isinstance(earlier, MarkCall) or earlier.joinable != call.joinable:
            continue
        args = earlier.args
        if not isinstance(args, list) or int(args[1]) >= most:
            return False
        args.append(call.args[-1])
        args[1] = int(args[1]) + 1
        if call.latest > earlier.latest:
            earlier.latest = call.latest
            args[3] = repr(call.latest)
        return True
    return False


def meta_fact(server: str, base: str, periods_csv: str) -> tuple[str, str, str]:
    """What :data:`confirmed` records for a bitmap: its server, its keys, its periods."""
    return server, base, periods_csv


def base_key(name: str, prefix: str | None = None) -> str:
    """The common start of every key of bitmap ``name`` (what ``metric_key`` makes)."""
    if prefix is None:
        return metric_key(KIND, name)
    return f"{prefix}:{KIND}:{{{name}}}"
