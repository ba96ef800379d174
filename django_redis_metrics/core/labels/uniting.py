"""Reading a metric as the union of its series: a labelled bitmap's or estimate's reads without
``labels()``.

A counter's series add up, so each can be read apart (``core/aggregate.py``). A union cannot
be made of the series' answers (a user in two series counts once): the read itself must span
the metric's keys and every series'. So the series are listed in the same round trip as the
*plain* read's first request (the read of the metric's own keys, as before labels existed):
when the metric has no series, the plain read goes on and costs what it cost before; when it
has some, the plain read is dropped after that first request (what it may have left in
Redis removed) and the *united* read, given the series, is made instead.

The plain read is dropped early because a labelled metric's own keys hold nothing: its first
request then wrote nothing and answered little, and the rest of it would only waste round trips.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ...conf import conf
from ..gather import pipelined_steps
from ..keys import TEMP, catalogue_key, to_str
from ..scripts import as_refusal
from ..steps import Op, Pipe, Script, Step, Steps, finish
from .aggregate import raised_reply, resume_steps
from .labelling import series_range, split

if TYPE_CHECKING:
    from ..base import Metric

T = TypeVar("T")
M = TypeVar("M", bound="Metric")

#: What a plain read's first request may leave behind when it is dropped: its temporary keys.
Scratch = Callable[[Step], list[str]]


def no_scratch(step: Step) -> list[str]:
    """A first request that leaves nothing behind (a read)."""
    return []


def with_union(
    metrics: Sequence[M],
    plain: Steps[T],
    united: Callable[[list[list[M]]], Steps[T]],
    scratch: Scratch = no_scratch,
) -> Steps[T]:
    """``plain``'s answer if none of ``metrics`` has series, else ``united(series)``,
    ``series[i]`` being those of ``metrics[i]`` (a series itself has none; nor has a metric
    that ``plain`` never reads). The listing rides in ``plain``'s first round trip.

    ``plain`` making no request at all (an empty range) is answered as it is: a read needing
    none of the metric's keys needs none of its series' either. ``scratch(step)``: the keys
    ``plain``'s first request may have written, unlinked when it is dropped."""
    listed = list({m.name: m for m in metrics if m.family is None}.values())
    if not listed:
        return (yield from plain)
    try:
        first = next(plain)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    ops = list(first.ops) if isinstance(first, Pipe) else [first]
    listings = [Op("zrangebylex", catalogue_key(m.KIND), *series_range(m.name)) for m in listed]
    replies = yield from pipelined_steps([*listings, *ops])
    found = {
        metric.name: [_series(metric, to_str(member)) for member in raised_reply(reply)]
        for metric, reply in zip(listed, replies[: len(listings)], strict=True)
    }
    if not any(found.values()):
        rest = replies[len(listings) :]
        reply: Any = rest if isinstance(first, Pipe) else rest[0]
        raising = isinstance(first, Pipe) and first.raise_on_error
        return (yield from resume_steps(plain, reply, raising))
    finish(plain)
    leftovers = scratch(first)
    if leftovers:  # one UNLINK each: on Redis Cluster they may lie in several slots
        yield Pipe([Op("unlink", key) for key in leftovers], raise_on_error=False)
    return (yield from united([found.get(m.name, []) if m.family is None else [] for m in metrics]))


def _series(metric: M, member: str) -> M:
    parsed = split(member)
    return metric.series_for(parsed.labels, other=parsed.other)


def temporary_keys(step: Step, keep: Callable[[str], bool] = lambda key: False) -> list[str]:
    """The temporary keys (``core/keys.py``) the scripts of ``step`` name, but those ``keep``
    says are meant to last (caches): what a dropped first request may have written."""
    ops = step.ops if isinstance(step, Pipe) else [step]
    prefix = f"{conf.PREFIX}:{TEMP}:{{"
    return [
        key
        for op in ops
        if isinstance(op, Script)
        for key in map(str, op.keys)
        if key.startswith(prefix) and not keep(key)
    ]


def checked(replies: Sequence[Any]) -> Sequence[Any]:
    """``replies`` (of a pipeline, or of gathered steps), the first error among them raised."""
    for reply in replies:
        if isinstance(reply, Exception):
            raise as_refusal(reply)
    return replies
