"""What a counter's increments send that depends only on its configuration, worked out once.

An increment's keys, the script's leading arguments, the fast path's key (``fast.Fact``) and
the fold bound of a ``Batch`` depend on the counter's name, samples and precisions, the
settings (``PREFIX``, and the precisions and samples a counter takes from them) and the client
(one server or a cluster). A :class:`WritePlan` holds them for one counter, one setting object
and one client; it is made again when any of the three changes (``override_settings`` replaces
the setting object), so an increment looks the setting object up twice (its client's and its
plan's check) where it read the setting four to six times. Only the slice starts and the count
are an increment's own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..conf import conf
from ..core import catalogue, transaction
from ..core.batch import Batch, FoldedCall, ScriptCall
from ..core.cleaning import listpack_entries
from ..core.connection import AnyRedisClient
from ..core.keys import catalogue_key, metric_key
from ..core.retention import MAX_AHEAD
from ..core.scripts import LuaScript
from . import fast
from .keys import KIND

if TYPE_CHECKING:
    from .model import Counter


#: Most finest slices one folded call covers. A call's own cost (the script, the clock, the
#: meta hash) is shared by the slices it opens, but each slice it opens or trims is looked up
#: in a compact hash by a scan, longer as the hash grows past its samples: with 120 samples and
#: one increment a second, the server's CPU per increment was lowest from 32 to 128 slices a
#: call (8.4 to 8.9 µs on a busy machine), higher with 8 (11.9: the 128 entries assumed before)
#: and with 392 (12.3: the most a hash of 120 samples holds compact under Redis' default 512).
FOLD_SLICES = 128


@dataclass(slots=True)
class WritePlan:
    """One counter's increments under one setting object on one client."""

    #: What the plan was made for: the counter's name, the setting object, the client.
    name: str
    raw: object
    client: AnyRedisClient
    samples: int
    precisions: tuple[int, ...]
    base: str
    #: The script's keys: the meta hash, one hash per precision, the catalogue if inline.
    keys: tuple[str, ...]
    #: The script's leading arguments: name, samples, inline catalogue, ``MAX_AHEAD``.
    head: tuple[str | int, ...]
    #: The fast path's key, ``None`` where it never runs (a cluster, a dedicated connection).
    fact: fast.Fact | None
    #: Most increments one folded call carries.
    fold_most: int
    #: What two plans folding together share: their keys and samples.
    fold_id: tuple[Any, ...]
    script: LuaScript
    #: Seconds of finest slices one folded call may cover (``None``: not read yet).
    block: int | None = field(default=None)

    def fold_block(self) -> int:
        """Seconds of finest slices one folded call may cover: at most :data:`FOLD_SLICES`,
        and a hash stays compact while the slices a call adds before trimming fit beside its
        samples, under the server's own ``hash-max-listpack-entries`` (read once per client,
        ``LISTPACK_ENTRIES`` where CONFIG is refused)."""
        block = self.block
        if block is None:
            client: Any = self.client  # a sync one: only a Batch folds
            entries = listpack_entries(client)
            slices = max(1, min(FOLD_SLICES, entries - self.samples))
            block = self.block = min(self.precisions) * slices
        return block

    def call(self, counter: Counter, count: int, timestamp: float) -> ScriptCall:
        """The short-form script call of one increment (``Counter._incr_one_call``): the latest
        slice start, then the slice start at each precision, in key order; its follow-up records
        the slices it opened."""
        second = math.floor(timestamp)
        starts = tuple([second - second % precision for precision in self.precisions])
        return ScriptCall(
            self.script,
            list(self.keys),
            [*self.head, count, "*", max(starts), *starts],
            fast.follow_up(counter, self.client, self.fact, starts),
        )

    def queue(self, batch: Batch, counter: Counter, count: int, timestamp: float) -> None:
        """Queue one increment on ``batch``: it joins the increments of the same counter queued
        right before it while their finest slices fall in one :meth:`fold_block`, as one call
        (:class:`IncrementRun`); the increment itself costs an append. A batch that does not
        join (the sender's) gets the increment's own call."""
        if not batch.joins:
            batch.add(self.call(counter, count, timestamp))
            return
        second = math.floor(timestamp)
        block = second // (self.block or self.fold_block())
        run = batch.open_run
        if (
            type(run) is IncrementRun
            and run.block == block
            and (run.plan is self or run.plan.fold_id == self.fold_id)
            and len(run.seconds) < self.fold_most
        ):
            run.seconds.append(second)
            run.counts.append(count)
        else:
            batch.open(IncrementRun(self, counter, block, [second], [count]))


@dataclass(slots=True)
class IncrementRun:
    """Increments of one counter queued one after another on a ``Batch`` (``core.batch``'s
    ``OpenRun``): closed, one call in the script's general form, their counts summed per
    slice, one upkeep per precision for all the slices they open."""

    plan: WritePlan
    counter: Counter
    #: The fold block of their finest slices (``second // fold_block()``).
    block: int
    seconds: list[int]
    counts: list[int]

    def close(self) -> ScriptCall:
        plan, counter = self.plan, self.counter
        if len(self.seconds) == 1:
            return plan.call(counter, self.counts[0], self.seconds[0])
        slices: dict[int, dict[int, int]] = {}
        for precision in plan.precisions:
            at: dict[int, int] = {}
            slices[precision] = at
            for second, count in zip(self.seconds, self.counts, strict=True):
                start = second - second % precision
                at[start] = at.get(start, 0) + count
        call = counter._incr_call(slices, plan.client, sum(self.counts))
        pairs = list(zip(self.counts, self.seconds, strict=True))
        return FoldedCall(
            call.script,
            call.keys,
            call.args,
            call.then,
            writes=len(pairs),
            one_by_one=lambda: [plan.call(counter, count, second) for count, second in pairs],
        )


def write_plan(counter: Counter, client: AnyRedisClient) -> WritePlan:
    """``counter``'s plan for the current settings on ``client`` (kept on the counter)."""
    raw = conf.raw
    plan: WritePlan | None = counter.__dict__.get("_write_plan")
    if plan is not None and plan.raw is raw and plan.client is client and plan.name is counter.name:
        return plan
    samples, precisions = counter.samples, counter.precisions
    inline = catalogue.inline_catalogue(client)
    base = metric_key(KIND, counter.name)
    keys = (f"{base}:meta", *(f"{base}:{p}" for p in precisions))
    if inline:
        keys += (catalogue_key(KIND),)
    supported = transaction.supports(client) or transaction.supports_async(client)  # type: ignore[arg-type]
    fact = fast.fact_of(client, base, samples, precisions) if supported else None  # type: ignore[arg-type]
    plan = WritePlan(
        counter.name,
        raw,
        client,
        samples,
        precisions,
        base,
        keys,
        (counter.name, samples, int(inline), MAX_AHEAD),
        fact,
        counter.MAX_PAIRS_PER_CALL // len(precisions),
        (keys, samples),
        fast.script("counter_incr"),
    )
    counter.__dict__["_write_plan"] = plan
    return plan
