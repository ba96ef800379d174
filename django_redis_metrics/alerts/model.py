"""``Alert``: a condition on a metric's value over a window, declared in ``metrics.py``.

    Alert("5xx spike", Counter("hits").labels(view="home", status="5xx"), above=10, over=300,
          for_=120)

Its state (normal, pending, firing, resolved) is kept in Redis (``state.py``) and moved by
the evaluations of ``check_alerts`` and ``clean_metrics`` (``evaluation.py``). A declaration
is checked when it is made: a bad one raises a ``TypeError`` or ``ValueError`` saying why.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.keys import metric_key, validate_name
from ..core.queries.queryset import MetricQuerySet
from ..core.steps import Steps
from ..core.validation import integer, shown
from ..gauge import Gauge
from ..statistic import Statistic
from .sources import KINDS, MEASURES, Source, model_of, plan, value_steps

#: The kind segment of an alert's keys (``<prefix>:alert:{<name>}:state``...).
KIND = "alert"
#: Longest window and pending period accepted: 31 days.
MAX_SECONDS = 31 * 86400


def _threshold(value: object, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} must be a number, not {shown(value)}.")
    if not math.isfinite(value):
        raise ValueError(f"{what} must be a finite number, not {shown(value)}.")
    return float(value)


def queryset_label(queryset: MetricQuerySet[Any]) -> str:
    """``counters where name=hits, status=5xx``: a queryset's lookups for people."""
    groups = []
    for group in queryset._query.groups:
        conditions = ", ".join(
            f"{c.field}{'' if c.lookup == 'exact' else '__' + c.lookup}="
            f"{','.join(c.value) if isinstance(c.value, tuple) else c.value}"
            for c in group.conditions
        )
        groups.append(f"not ({conditions})" if group.negated else conditions)
    where = f" where {'; '.join(groups)}" if groups else ""
    return f"{queryset.model.LABEL}s{where}"


class Alert:
    """Fires when the value of ``source`` over the last ``over`` seconds is above ``above``
    (or below ``below``) for at least ``for_`` seconds; resolves when it no longer is.

    ``source``: a ``Counter``, ``Statistic`` or ``Gauge`` (a metric or one series from
    ``.labels(...)``; a labelled counter or statistic adds up or merges all its series), or a
    queryset of counters or statistics. ``measure``: for a statistic, which of ``count``,
    ``sum``, ``min``, ``max``, ``mean``, ``stddev``, ``p50``, ``p95``, ``p99`` (required).
    """

    def __init__(
        self,
        name: str,
        source: Source,
        *,
        above: float | None = None,
        below: float | None = None,
        over: int = 300,
        for_: int = 0,
        measure: str | None = None,
    ) -> None:
        self.name = validate_name(name, "alert name")
        if not isinstance(source, (*KINDS, MetricQuerySet)):
            raise TypeError(
                f"Alert {name!r} watches a Counter, Statistic or Gauge (or a series of one), or "
                f"a queryset of counters or statistics, not {shown(source)}."
            )
        model = model_of(source)
        if isinstance(source, MetricQuerySet) and not issubclass(model, KINDS[:2]):
            raise TypeError(
                f"Alert {name!r}: a queryset of {model.LABEL}s has no value to watch; use a "
                "queryset of counters or statistics."
            )
        if isinstance(source, Gauge) and source.label_names and source.family is None:
            raise TypeError(
                f"Alert {name!r}: gauge {source.name!r} is labelled; watch one of its series "
                "(.labels(...))."
            )
        self.source = source
        self.above = _threshold(above, f"Alert {name!r}: above")
        self.below = _threshold(below, f"Alert {name!r}: below")
        if self.above is None and self.below is None:
            raise ValueError(f"Alert {name!r} needs a threshold: above=, below= or both.")
        if self.above is not None and self.below is not None and self.below >= self.above:
            raise ValueError(
                f"Alert {name!r}: below ({below}) must be less than above ({above}), or the "
                "alert would always fire."
            )
        self.over = integer(
            over, f"Alert {name!r}: over", minimum=1, maximum=MAX_SECONDS, unit="seconds"
        )
        self.for_ = integer(
            for_, f"Alert {name!r}: for_", minimum=0, maximum=MAX_SECONDS, unit="seconds"
        )
        self.measure = self._checked_measure(model, measure)
        if not issubclass(model, Gauge) and not isinstance(source, MetricQuerySet):
            plan(source, self.over)  # refuses a window too long

    def _checked_measure(self, model: type[Any], measure: object) -> str | None:
        if issubclass(model, Statistic):
            if measure not in MEASURES:
                raise ValueError(
                    f"Alert {self.name!r} watches a statistic: measure= must be one of "
                    f"{', '.join(MEASURES)}, not {shown(measure)}."
                )
            return str(measure)
        if measure is not None:
            raise ValueError(
                f"Alert {self.name!r}: measure= is for statistics, not {model.LABEL}s."
            )
        return None

    def __repr__(self) -> str:
        return f"<Alert {self.name!r}: {self.describe()}>"

    # What it says

    @property
    def source_label(self) -> str:
        """The watched metric, series or queryset, for people."""
        if isinstance(self.source, MetricQuerySet):
            return queryset_label(self.source)
        shown_name = self.source.name.replace("\x1f", " ")
        return f"{self.source.LABEL} {shown_name}" + (f" {self.measure}" if self.measure else "")

    @property
    def threshold(self) -> str:
        """``"> 10"``, ``"< 1"`` or ``"> 10 or < 1"``."""
        parts = []
        if self.above is not None:
            parts.append(f"> {self.above:g}")
        if self.below is not None:
            parts.append(f"< {self.below:g}")
        return " or ".join(parts)

    def describe(self) -> str:
        hold = f" for {self.for_} s" if self.for_ else ""
        return f"{self.source_label} over {self.over} s {self.threshold}{hold}"

    def breached(self, value: float | None) -> bool:
        """Whether ``value`` crosses a threshold (no data never does)."""
        if value is None:
            return False
        return (self.above is not None and value > self.above) or (
            self.below is not None and value < self.below
        )

    # Redis

    def key(self, part: str) -> str:
        """One of the alert's keys (``state``, ``history``, ``outbox``), in one slot."""
        return metric_key(KIND, self.name, part)

    def value_steps(self, now: float) -> Steps[Any]:
        """The watched value over the window ending at ``now`` (``None``: no data)."""
        return (yield from value_steps(self.source, self.measure, self.over, now))
