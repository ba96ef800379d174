"""A single mark of an integer id as a bare transaction, when this process has nothing to check.

When ``plan.py``'s conditions for the script's fast path hold (the bitmap's meta and listing
confirmed, the PREFIX's id kind known, no period near its end, no mark ahead), a mark is one
``MULTI; EXISTS; SETBIT`` per period ``; EXEC`` (``core/transaction.py``): what bitmapist sends,
plus the ``EXISTS``. Should a period key have been missing (evicted, or the bitmap deleted), the
SETBIT made it without its expiry, so the caller sends the script's slow path next, which gives
it back its expiry, index entry, meta and listing.
"""

from __future__ import annotations

from ...core import transaction
from ...core.connection import RedisClient
from ..ids import client_facts, id_cache
from . import plan as mark_plan
from .plan import MarkSettings


def try_mark(
    client: RedisClient,
    name: str,
    periods: tuple[str, ...],
    periods_csv: str,
    value: int | str,
    timestamp: float,
    context: MarkSettings,
) -> bool:
    """Mark ``value`` at ``timestamp`` as a bare transaction if nothing needs checking; whether it
    did (``False``: the caller sends the script, which checks everything by the Redis clock)."""
    if not isinstance(value, int) or not transaction.supports(client):
        return False
    server = client_facts(client)[0]
    if not id_cache.holds_in(server, context.prefix, "int"):
        return False
    plan = mark_plan.plan_for(
        mark_plan.base_key(name, context.prefix), periods, timestamp, context.zone, context.keep
    )
    fact = mark_plan.meta_fact(server, plan.keys[0], periods_csv)
    if fact not in mark_plan.confirmed or mark_plan.needs_checks(plan, timestamp):
        return False
    present = transaction.set_bit_if_present(client, plan.period_keys, value)  # type: ignore[arg-type]
    if present:
        return True
    mark_plan.confirmed.discard(fact)  # the script's slow path repairs (or reports the error)
    return False
