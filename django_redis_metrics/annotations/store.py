"""Writing and reading annotations: ``annotate`` is one atomic script call
(``lua/annotation_add.lua``), ``annotations`` one ZRANGEBYSCORE, each one round trip.

Each is written once as a generator of steps and run by ``drive`` or ``adrive``; the charts
queue :func:`range_op` in the same pipeline as their own reads and parse its reply with
:func:`parse`.
"""

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..conf import conf
from ..core.drive import adrive, drive
from ..core.keys import to_str
from ..core.retention import MAX_AHEAD
from ..core.scripts import ScriptLibrary
from ..core.steps import Op, Script, Steps
from ..core.timeutil import When, to_timestamp
from .bounds import clean_tags, clean_text
from .keys import log_key, seq_key

script = ScriptLibrary(__name__.rpartition(".")[0])
#: Characters of the sequence number in front of each member.
SEQ_DIGITS = 12
Annotation = dict[str, Any]


def annotate(text: str, when: When = None, tags: Iterable[str] | str = ()) -> Annotation:
    """Store the annotation ``text`` at ``when`` (default: now) with ``tags`` (one str is one
    tag): one atomic round trip, which also drops annotations past ``ANNOTATION_RETENTION``
    and beyond the newest ``ANNOTATION_MAX_COUNT``. Returns it as ``annotations`` would.
    Bad input raises ``TypeError``/``ValueError`` and writes nothing; a time older than the
    retention or more than a minute ahead of the Redis clock raises ``MetricsRefused``."""
    return drive(_annotate_steps(text, when, tags))


async def aannotate(text: str, when: When = None, tags: Iterable[str] | str = ()) -> Annotation:
    """``annotate`` awaited."""
    return await adrive(_annotate_steps(text, when, tags))


def annotations(
    start: When, end: When, tags: Iterable[str] | str | None = None
) -> list[Annotation]:
    """The annotations with ``start <= when <= end``, oldest first, each a dict of ``when``
    (epoch seconds), ``text`` and ``tags``; with ``tags``, only those carrying at least one
    of them. One round trip, at most ``ANNOTATION_MAX_COUNT`` annotations."""
    return drive(_range_steps(start, end, tags))


async def aannotations(
    start: When, end: When, tags: Iterable[str] | str | None = None
) -> list[Annotation]:
    """``annotations`` awaited."""
    return await adrive(_range_steps(start, end, tags))


def _annotate_steps(text: object, when: When, tags: object) -> Steps[Annotation]:
    settings = conf.snapshot()
    value = clean_text(text, settings.ANNOTATION_MAX_LENGTH)
    found = clean_tags(tags)
    timestamp = to_timestamp(when)
    body = json.dumps({"text": value, "tags": found}, ensure_ascii=False, separators=(",", ":"))
    args: list[str | int] = [repr(timestamp), body, settings.ANNOTATION_MAX_COUNT]
    args += [settings.ANNOTATION_RETENTION, MAX_AHEAD]
    yield Script(script("annotation_add"), [log_key(), seq_key()], args)
    return {"when": timestamp, "text": value, "tags": found}


def _range_steps(start: When, end: When, tags: object) -> Steps[list[Annotation]]:
    low, high = to_timestamp(start, "start"), to_timestamp(end, "end")
    wanted = set(clean_tags(tags))
    found = parse((yield range_op(low, high)))
    return [item for item in found if not wanted or wanted.intersection(item["tags"])]


def range_op(start: float, end: float, limit: int | None = None) -> Op:
    """The read of the annotations in ``[start, end]``; with ``limit``, of the newest
    ``limit`` of them (newest first: :func:`parse` puts them back in order)."""
    if limit is None:
        return Op("zrangebyscore", log_key(), repr(start), repr(end), None, None, True)
    return Op("zrevrangebyscore", log_key(), repr(end), repr(start), 0, limit, True)


def parse(reply: Sequence[tuple[Any, float]]) -> list[Annotation]:
    """The annotations of a :func:`range_op` reply, oldest first (of equal times, in the
    order they were written)."""
    found = []
    for member, score in reply:
        text = to_str(member)
        body = json.loads(text[SEQ_DIGITS:])
        found.append((float(score), text[:SEQ_DIGITS], body))
    found.sort(key=lambda item: (item[0], item[1]))
    return [{"when": when, "text": body["text"], "tags": body["tags"]} for when, _, body in found]
