"""Admitting a labelled metric's series before its first write (``core/labelling.py``).

A series not yet known to this process is admitted by one script on its kind's catalogue
(``series_admit.lua``): listed while its metric holds fewer than ``max_series`` series, else
refused, its writes then going to the metric's ``__other__`` series. The answer is remembered
per process (``ADMITTED_CACHE`` series), so a series costs that round trip once per process.
The shards of a metric declared with ``shards=`` (``core/shards.py``) are never admitted: a
write of the metric goes to one of them.

The admission runs where the write is sent: at once for a direct write or one queued on a
``Batch``, in the sender's thread for ``defer=True`` (where a Redis error keeps the writes for
later, as for any other write). A refusal is counted in the ``__other__`` series' meta hash
(field ``overflow``: the label sets refused, once per process each) and logged once per metric
and process.
"""

from __future__ import annotations

import functools
import logging
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from threading import Lock
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar, cast

from django.core.signals import setting_changed
from django.dispatch import receiver

from ..drive import adrive, drive
from ..keys import catalogue_key
from ..scripts import script
from ..shards import is_shard, write_target
from ..steps import Op, Script, Steps
from .labelling import OTHER, OVERFLOW_FIELD, other_name, series_range

if TYPE_CHECKING:
    from ..base import Metric

logger = logging.getLogger("django_redis_metrics")

#: Most admission answers a process remembers (least recently used forgotten first).
ADMITTED_CACHE = 100_000

M = TypeVar("M", bound="Metric")
P = ParamSpec("P")
R = TypeVar("R")


class _Answers:
    """What this process learnt: (catalogue, series name) -> admitted (True) or sent to
    ``__other__``."""

    def __init__(self, size: int = ADMITTED_CACHE) -> None:
        self.size = size
        self._answers: OrderedDict[tuple[str, str], bool] = OrderedDict()
        self._warned: set[tuple[str, str]] = set()
        self._lock = Lock()

    def get(self, key: tuple[str, str]) -> bool | None:
        with self._lock:
            answer = self._answers.get(key)
            if answer is not None:
                self._answers.move_to_end(key)
            return answer

    def put(self, key: tuple[str, str], admitted: bool) -> None:
        with self._lock:
            self._answers[key] = admitted
            while len(self._answers) > self.size:
                self._answers.popitem(last=False)

    def first_warning(self, key: tuple[str, str]) -> bool:
        with self._lock:
            if key in self._warned:
                return False
            self._warned.add(key)
            return True

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()
            self._warned.clear()


answers = _Answers()
# A child forked while another thread held the lock would wait for it forever.
os.register_at_fork(after_in_child=lambda: setattr(answers, "_lock", Lock()))


@receiver(setting_changed)
def _forget_on_new_settings(*, setting: str, **kwargs: object) -> None:
    """Another Redis or prefix may now be in use: what was learnt no longer holds."""
    if setting == "DJANGO_REDIS_METRICS":
        answers.clear()


def _admission_steps(series: M) -> Steps[M]:
    """The metric a write to ``series`` goes to: itself, or its metric's ``__other__``."""
    family = series.family
    assert family is not None
    if is_shard(series):  # a declared shard: bounded by ``shards``, not by max_series
        return series
    catalogue = catalogue_key(series.KIND)
    key = (catalogue, series.name)
    known = answers.get(key)
    if known is None:
        low, high = series_range(family.name)
        reply = yield Script(
            script("series_admit"),
            [catalogue],
            [series.name, low, high, family.max_series, other_name(family.name)],
        )
        known = bool(int(reply))
        if not known:
            other = family.other_series()
            yield Op("hincrby", other.meta_key, OVERFLOW_FIELD, 1)
            if answers.first_warning((catalogue, family.name)):
                logger.warning(
                    "The %s %r holds its max_series (%d) series: label sets it has not "
                    "seen yet (e.g. %s) are written to its %r series.",
                    family.LABEL,
                    family.name,
                    family.max_series,
                    ", ".join(f"{k}={v}" for k, v in series.label_pairs),
                    OTHER,
                )
        answers.put(key, known)
    return series if known else cast(M, family.other_series())


def admitted(
    method: Callable[Concatenate[M, P], R],
) -> Callable[Concatenate[M, P], R]:
    """A write method run on the series it may write to: a labelled metric's own name refuses
    writes, a series is admitted first (``defer=True`` leaves that to the sender)."""

    @functools.wraps(method)
    def write(self: M, *args: P.args, **kwargs: P.kwargs) -> R:
        if self.family is None:
            self.refuse_unlabelled_write()
            target = write_target(self, deferred=bool(kwargs.get("defer")))  # a shard, if any
            return method(target, *args, **kwargs)
        if kwargs.get("defer"):
            return method(self, *args, **kwargs)
        return method(drive(_admission_steps(self)), *args, **kwargs)

    return write  # type: ignore[return-value]


def aadmitted(
    method: Callable[Concatenate[M, P], Awaitable[R]],
) -> Callable[Concatenate[M, P], Awaitable[R]]:
    """:func:`admitted` for an ``a``-twin: the admission awaited on the loop's client."""

    @functools.wraps(method)
    async def write(self: M, *args: P.args, **kwargs: P.kwargs) -> R:
        if self.family is None:
            self.refuse_unlabelled_write()
            return await method(write_target(self), *args, **kwargs)
        return await method(await adrive(_admission_steps(self)), *args, **kwargs)

    return write  # type: ignore[return-value]


def admit_all(many: Iterable[Metric]) -> None:
    """Admit every series of ``many`` not yet known to this process, in one round trip (one
    pipeline: the sender admits a batch's new series together before writing them). A
    connection error propagates; a series whose admission met an error reply stays unknown,
    and its own write admits it again (and meets the error there, as without this)."""
    from ..gather import gather_steps

    new = [
        m
        for m in many
        if m.family is not None and not is_shard(m) and answers.get(_answer_key(m)) is None
    ]
    if new:
        drive(gather_steps([_admission_steps(m) for m in new]))


def _answer_key(series: Metric) -> tuple[str, str]:
    return catalogue_key(series.KIND), series.name


def admit(series: M) -> M:
    """The metric a write to ``series`` goes to (itself, or its metric's ``__other__``)."""
    if series.family is None:
        return series
    return drive(_admission_steps(series))
