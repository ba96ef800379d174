"""Reading a metric as the sum of its series: a labelled metric's reads without ``labels()``.

A read of a metric (``hits.total(86400)``) answers for the metric as a whole: its own keys plus
every series listed under its name (``core/labelling.py``). The list of series travels in the
same round trip as the metric's own first read, so a metric without series costs what it cost
before labels existed; when it has series, their reads go together in one more round (the
gather driver: one pipeline, split per node on Redis Cluster), and ``combine`` joins the
answers (counters add, bitmaps unite, ...).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ..gather import gather_steps, pipelined_steps
from ..keys import catalogue_key, to_str
from ..scripts import as_refusal
from ..shards import shards_of
from ..steps import Op, Pipe, Script, Step, Steps
from .labelling import series_range, split

if TYPE_CHECKING:
    from ..base import Metric

T = TypeVar("T")
M = TypeVar("M", bound="Metric")


def series_of_steps(metric: M) -> Steps[list[M]]:
    """The series listed under ``metric``'s name (none for a series itself)."""
    if metric.family is not None:
        return []
    low, high = series_range(metric.name)
    members = yield Op("zrangebylex", catalogue_key(metric.KIND), low, high)
    return [_series(metric, to_str(member)) for member in members]


def member_metric(make: Callable[[str], M], member: str) -> M:
    """The metric a catalogue member names: ``make(name)`` for a metric's own name, that
    metric's series for a series' name (cleaners walk the catalogue, which lists both)."""
    parsed = split(member)
    metric = make(parsed.name)
    return metric.series_for(parsed.labels, other=parsed.other) if parsed.is_series else metric


def _series(metric: M, member: str) -> M:
    parsed = split(member)
    return metric.series_for(parsed.labels, other=parsed.other)


def with_series(
    metric: M,
    read: Callable[[M], Steps[T]],
    combine: Callable[[T, Sequence[T]], T],
) -> Steps[T]:
    """``read(metric)`` combined with ``read`` of each of its series: ``combine(own, theirs)``.

    A series (or a metric with none) answers ``read`` alone; the first round trip carries the
    listing of the series together with the metric's own first request."""
    if metric.family is not None:
        return (yield from read(metric))
    shards = shards_of(metric)
    if shards:
        return (yield from _with_shards(metric, shards, read, combine))
    own = read(metric)
    low, high = series_range(metric.name)
    listing = Op("zrangebylex", catalogue_key(metric.KIND), low, high)
    try:
        first: Step | None = next(own)
    except StopIteration as done:
        first, result = None, done.value
    if first is None:
        members = yield listing
    else:
        ops = list(first.ops) if isinstance(first, Pipe) else [first]
        replies = yield from pipelined_steps([listing, *ops])
        members = raised_reply(replies[0])
        reply: Any = replies[1:] if isinstance(first, Pipe) else replies[1]
        raising = isinstance(first, Pipe) and first.raise_on_error
        result = yield from resume_steps(own, reply, raising)
    if not members:
        return result  # type: ignore[no-any-return]
    return combine(result, (yield from series_steps(metric, members, read)))


def series_steps(
    metric: M, members: Sequence[Any], read: Callable[[M], Steps[T]]
) -> Steps[list[T]]:
    """``read`` of each series of ``metric`` that ``members`` (its catalogue listing) names,
    together (the first error raised)."""
    series = [_series(metric, to_str(member)) for member in members]
    answers = yield from gather_steps([read(each) for each in series])
    for answer in answers:
        if isinstance(answer, Exception):
            raise answer
    return answers


def _with_shards(
    metric: M,
    shards: list[M],
    read: Callable[[M], Steps[T]],
    combine: Callable[[T, Sequence[T]], T],
) -> Steps[T]:
    """``with_series`` of a metric declared with ``shards`` (``core/shards.py``): its own read,
    every shard's and the listing of its series together, one pipeline per node; a second
    round only for series listed beyond the declared shards (more shards declared before)."""
    known = {shard.name for shard in shards}
    answers = yield from gather_steps(
        [_listing_steps(metric), read(metric), *(read(shard) for shard in shards)]
    )
    for answer in answers:
        if isinstance(answer, Exception):
            raise answer
    members, own, theirs = answers[0], answers[1], answers[2:]
    extra = [_series(metric, member) for member in members if member not in known]
    if extra:
        more = yield from gather_steps([read(each) for each in extra])
        for answer in more:
            if isinstance(answer, Exception):
                raise answer
        theirs += more
    return combine(own, theirs)


def _listing_steps(metric: M) -> Steps[list[str]]:
    low, high = series_range(metric.name)
    members = yield Op("zrangebylex", catalogue_key(metric.KIND), low, high)
    return [to_str(member) for member in members]


def raised_reply(reply: Any) -> Any:
    if isinstance(reply, Exception):
        raise as_refusal(reply)
    return reply


def resume_steps(steps: Steps[T], reply: Any, raise_on_error: bool) -> Steps[T]:
    """Go on with ``steps`` from the reply to its first request (given in place)."""
    if isinstance(reply, list):
        error = (
            next((r for r in reply if isinstance(r, Exception)), None) if raise_on_error else None
        )
    else:
        error = reply if isinstance(reply, Exception) else None
    try:
        step: Step | Script = (
            steps.throw(as_refusal(error)) if error is not None else steps.send(reply)
        )
        while True:
            try:
                answer = yield step
            except Exception as exc:  # an error reply: the read's own to handle
                step = steps.throw(exc)
            else:
                step = steps.send(answer)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
