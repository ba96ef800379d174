"""Family names: a metric's name made a Prometheus metric name, and one family per name.

A metric named ``api.calls`` or ``latency:home`` becomes ``<namespace>_api_calls`` and
``<namespace>_latency_home``: every character outside ``[a-zA-Z0-9_]`` becomes ``_`` (colons
too, though the format allows them: Prometheus keeps them for recording rules, and asks
exporters not to use them), one character for one, so fewer names collide.

Two metrics may still end up with the same family name (``api.calls`` and ``api_calls``), or
with a sample name another family uses (a gauge ``x_total`` beside a counter ``x``): a scrape
holding both would be refused by Prometheus. The first to claim a name keeps it, the other is
left out of the exposition and logged once per process. The order is stable, so a scrape
leaves out the same one each time: the kinds in their registration order (counters first),
then within a kind a metric whose name needed no change before one that did, then by name.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence

from ..conf import conf

logger = logging.getLogger("django_redis_metrics.exposition")

_INVALID = re.compile(r"[^a-zA-Z0-9_]")
#: Most left-out metrics remembered as already logged (the set is emptied past it).
_LOGGED_MAX = 10_000
_logged: set[tuple[str, str, str]] = set()


def sanitise(name: str) -> str:
    """``name`` with every character outside ``[a-zA-Z0-9_]`` replaced by ``_``."""
    return _INVALID.sub("_", name)


def family_name(namespace: str, clean: str) -> str:
    """The Prometheus family name of a metric whose name, sanitised, is ``clean``:
    ``<namespace>_<clean>``, or ``clean`` alone (with a ``_`` before a leading digit) when
    ``namespace`` is empty."""
    if namespace:
        return f"{namespace}_{clean}"
    return f"_{clean}" if clean[:1].isdigit() else clean


class Claims:
    """The family and sample names a scrape has handed out."""

    def __init__(self) -> None:
        self._taken: set[str] = set()

    def claim(self, names: Sequence[str]) -> bool:
        """Take every one of ``names`` if none is taken yet; whether they were."""
        taken = self._taken
        for name in names:
            if name in taken:
                return False
        taken.update(names)
        return True


def left_out(kind: str, metric: str, family: str) -> None:
    """Log (once per process) that ``metric`` was left out: its ``family`` name is taken."""
    key = (conf.PREFIX, kind, metric)
    if key in _logged:
        return
    if len(_logged) >= _LOGGED_MAX:
        _logged.clear()
    _logged.add(key)
    logger.warning(
        "The %s %r is left out of the Prometheus exposition: its family name %r, or one of "
        "its sample names, is already taken by another metric. Rename one of them.",
        kind,
        metric,
        family,
    )
