"""The steps of marks (see ``core/steps.py``): the ``bitmap_mark.lua`` calls of a mark or of a
``mark_many``, after mapping first-seen str/UUID ids or checking the PREFIX's id kind where the
script cannot (Redis Cluster), and what their replies confirm.

Written once for ``mark`` and ``mark_many`` (driven on the sync client) and ``amark`` (awaited
on the async one), so both take the script's fast path under the same conditions
(``plan.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any, ClassVar, Protocol

from ...core import catalogue
from ...core.batch import calls_steps
from ...core.connection import AnyRedisClient
from ...core.steps import Steps
from ..ids import (
    check_int_kind_steps,
    client_facts,
    id_cache,
    mixed_ids_error,
    resolve_ids_steps,
)
from ..query import script
from . import plan as mark_plan
from .plan import MarkCall, MarkGroup, MarkSettings

Fact = tuple[str, str, str]


class Marked(Protocol):
    """What the steps need of a bitmap (``UniqueBitmap``): its name and periods, its limits,
    and how it is listed in its catalogue on a cluster."""

    name: str
    periods: tuple[str, ...]
    _periods_csv: str
    MAX_MARKS_PER_CALL: ClassVar[int]
    CALLS_PER_ROUND_TRIP: ClassVar[int]

    def _listing_steps(self, unlisted: Any) -> Steps[None]: ...


def mark_steps(
    client: AnyRedisClient,
    bitmap: Marked,
    value: int | str,
    timestamp: float,
    context: MarkSettings,
) -> Steps[MarkCall]:
    """The script call of one mark of a checked ``value`` at ``timestamp`` (a first-seen str id
    on the cluster is mapped first: one more round trip)."""
    base = mark_plan.base_key(bitmap.name, context.prefix)
    plan = mark_plan.plan_for(base, bitmap.periods, timestamp, context.zone, context.keep)
    if isinstance(value, str):
        offset = id_cache.get(client, value)
        if offset is None:
            if catalogue.inline_catalogue(client):
                return (
                    yield from plan_call(
                        client, bitmap, plan, [value], timestamp, context, mapped=True
                    )
                )
            offset = (yield from resolve_ids_steps(client, [value], assign=True))[0]
            assert offset is not None
        return (
            yield from plan_call(client, bitmap, plan, [offset], timestamp, context, kind="mapped")
        )
    return (yield from plan_call(client, bitmap, plan, [value], timestamp, context))


def plan_call(
    client: AnyRedisClient,
    bitmap: Marked,
    plan: mark_plan.PeriodsPlan,
    offsets: Sequence[int | str],
    latest: float,
    context: MarkSettings,
    *,
    mapped: bool = False,
    kind: str = "int",
) -> Steps[MarkCall]:
    """One ``bitmap_mark`` call setting ``offsets`` in ``plan``'s periods; the script's fast
    path is offered when this process has nothing left to check (see plan.py)."""
    server, cluster = client_facts(client)
    inline = not cluster
    if mapped:
        kind = "mapped"
    if cluster and kind == "int":
        yield from check_int_kind_steps(client)
    csv = bitmap._periods_csv
    fact = mark_plan.meta_fact(server, plan.keys[0], csv)
    kind_known = cluster or (not mapped and id_cache.holds_in(server, context.prefix, kind))
    fast = (
        kind_known
        and not mapped
        and fact in mark_plan.confirmed
        and not mark_plan.needs_checks(plan, latest)
    )
    keys, args = mark_plan.mark_args(
        plan,
        offsets,
        fast=fast,
        name=bitmap.name,
        inline=inline,
        mapped=mapped,
        periods_csv=csv,
        generation_ttl=context.generation_ttl,
        kind="" if kind_known else kind,
        latest=latest,
        catalogue=context.catalogue,
    )
    first = offsets[0] if mapped else None
    return MarkCall(
        script("bitmap_mark"),
        keys,
        args,
        then=partial(marked_steps, client, bitmap, first, kind, fact),
        joinable=(*keys, *fact, kind) if fast and len(offsets) == 1 else None,
        latest=latest,
    )


def mark_many_steps(
    client: AnyRedisClient,
    bitmap: Marked,
    groups: list[MarkGroup],
    kind: str,
    context: MarkSettings,
) -> Steps[int]:
    """Write marks grouped and validated by ``plan.group_marks``: new str ids mapped
    ``MAX_MARKS_PER_CALL`` a call, then ``MAX_MARKS_PER_CALL`` users a script call,
    ``CALLS_PER_ROUND_TRIP`` calls a round trip; returns the number of script calls."""
    most = bitmap.MAX_MARKS_PER_CALL
    resolved: dict[str, int] = {}
    if kind == "mapped":
        names = sorted({str(v) for group in groups for v in group.values})
        for start in range(0, len(names), most):
            some = names[start : start + most]
            found = yield from resolve_ids_steps(client, some, assign=True)
            resolved.update((n, int(o or 0)) for n, o in zip(some, found, strict=True))
    calls = []
    for group in groups:
        offsets = sorted({resolved[v] if isinstance(v, str) else v for v in group.values})
        for start in range(0, len(offsets), most):
            chunk = offsets[start : start + most]
            call = yield from plan_call(
                client, bitmap, group.plan, chunk, group.latest, context, kind=kind
            )
            calls.append(call)
    for start in range(0, len(calls), bitmap.CALLS_PER_ROUND_TRIP):
        yield from calls_steps(calls[start : start + bitmap.CALLS_PER_ROUND_TRIP])
    return len(calls)


def marked_steps(
    client: AnyRedisClient,
    bitmap: Marked,
    mapped: object,
    kind: str,
    fact: Fact,
    reply: Any,
) -> Steps[None]:
    """A mark's follow-up: record what a slow-path reply confirmed (offset, id kind, meta,
    listing); on a cluster, list the bitmap if the reply says it may be unlisted."""
    listed = confirm_reply(client, mapped, kind, reply)
    if listed is not None:
        if not catalogue.inline_catalogue(client):
            yield from bitmap._listing_steps(listed)
        mark_plan.confirmed.add(fact)


def confirm_reply(client: AnyRedisClient, mapped: object, kind: str, reply: Any) -> int | None:
    """Record what a mark's slow-path reply confirmed (a newly mapped id's offset, the PREFIX's
    id kind) and return its flag "not known to be listed" for the caller to act on; ``None``
    when there is nothing to list: the fast path's bare ``0``, or nothing written (every period
    past its retention). A reply refusing ids of the other kind raises its ``ValueError``."""
    if isinstance(reply, int):
        return None
    listed = int(reply[0])
    if listed == -1:
        raise mixed_ids_error(reply[1], kind)
    if mapped is not None:
        id_cache.put(client, str(mapped), int(reply[1]))
    if listed == -2:
        return None
    if catalogue.inline_catalogue(client):
        id_cache.set_holds(client, kind)
    return listed
