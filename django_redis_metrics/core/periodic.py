"""What the kinds of metric kept per calendar period share (``UniqueBitmap``,
``UniqueEstimate``): their periods, the key of each period, and the period a read names."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime, timedelta, tzinfo
from typing import Any, ClassVar, Self

from .base import Metric
from .keys import metric_key, to_str, validate_name
from .periods import EARLIEST_DAY, PERIOD_NAMES, Period, period_class
from .timeutil import When

DEFAULT_PERIODS = ("day", "week", "month")
#: A kind's retention bounds of one period: ``(expire_at_ms, oldest_kept_start)``.
Bounds = Callable[[Period, int], tuple[int, float]]


def oldest_kept_day(
    periods: Iterable[str], keep: Mapping[str, int], bounds: Bounds, zone: tzinfo, now: float
) -> date:
    """The first day that one of ``periods`` still keeps at ``now`` (by ``keep`` of each)."""
    oldest = min(
        bounds(period_class(name).containing(now, zone), keep[name])[1] for name in periods
    )
    return datetime.fromtimestamp(oldest, zone).date()


def horizon_day(periods: Iterable[str], zone: tzinfo, now: float) -> date:
    """The last day a range may reach: the end of the coarsest kept period (month, else week,
    else day) holding tomorrow. Writes further ahead of the clock are refused, and ending on a
    period's last day keeps a range of whole periods whole."""
    names = set(periods)
    coarsest = next((name for name in ("month", "week") if name in names), "day")
    period = period_class(coarsest).containing(now + 86400, zone)
    return (period.end - timedelta(seconds=1)).date()


def clipped_range(first: date, last: date, oldest: date, horizon: date) -> tuple[date, date] | None:
    """The days from ``first`` to ``last`` that can hold data: none before ``oldest`` (the
    first day a period kept still covers), none after ``horizon`` (see :func:`horizon_day`).
    ``None`` if no day can. A range reaching to the year 9998 plans a few keys, not
    thousands."""
    if last < first:
        raise ValueError("end must not be before start.")
    first, last = max(first, oldest), min(last, horizon)
    return (first, last) if first <= last else None


def days_back(today: date, days: int) -> date:
    """The first of the ``days`` days ending with ``today``, never before the year 2 (a
    ``last(2**63)`` asks for every day kept, which clipping then bounds)."""
    return today - timedelta(days=min(days - 1, (today - EARLIEST_DAY).days))


def validate_periods(periods: object) -> tuple[str, ...]:
    """Known, distinct period names in canonical order (hour, day, week, month)."""
    if isinstance(periods, str | bytes) or not isinstance(periods, Iterable):
        raise TypeError(f"periods must be a sequence of period names, not {periods!r}.")
    names = list(periods)
    if not names:
        raise ValueError("periods must name at least one period.")
    for name in names:
        period_class(name)
    return tuple(p for p in PERIOD_NAMES if p in names)


class PeriodicMetric(Metric):
    """A metric with one key per period it keeps (hour, day, ISO week, month in TIME_ZONE).

    Subclasses set ``NOUN``, how messages name the kind ("Bitmap", "Estimate").
    """

    NOUN: ClassVar[str]
    periods: tuple[str, ...]

    def __init__(
        self,
        name: str,
        periods: Sequence[str] = DEFAULT_PERIODS,
        *,
        labels: Sequence[str] = (),
        max_series: int | None = None,
    ) -> None:
        self.name = validate_name(name, f"{self.NOUN.lower()} name")
        self.periods = validate_periods(periods)
        self._declare_labels(labels, max_series)

    @classmethod
    def from_meta(cls, name: str, meta: Mapping[Any, Any]) -> Self:
        """The metric with the periods its stored meta hash names."""
        stored = {to_str(k): to_str(v) for k, v in meta.items()}.get("periods")
        if stored is None:
            raise LookupError(f"{cls.NOUN} {name!r} has no stored configuration.")
        names = [p for p in stored.split(",") if p in PERIOD_NAMES]
        return cls(name, periods=names or DEFAULT_PERIODS)

    def _describe(self) -> str:
        return f"periods={self.periods}"

    def key(self, period: Period) -> str:
        """The key of one period, e.g. ``metrics:bitmap:{active}:week:2020-W53``."""
        return metric_key(self.KIND, self.name, period.name, period.suffix)

    def index_key(self, period_name: str) -> str:
        """The sorted set of this metric's periods of one kind, scored by their start."""
        return metric_key(self.KIND, self.name, "index", period_name)

    def _period(self, period: str | Period, when: When = None) -> Period:
        """``period`` itself, or the period of that name holding ``when``, if it is kept."""
        if isinstance(period, Period):
            chosen: Period = period
        else:
            chosen = period_class(period).containing(when)
        if chosen.name not in self.periods:
            raise ValueError(
                f"{self.NOUN} {self.name!r} keeps no {chosen.name} keys; "
                f"it keeps {', '.join(self.periods)}."
            )
        return chosen
