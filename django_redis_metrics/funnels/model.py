"""``Funnel``: where people drop out, from unique-user bitmaps.

``Funnel(steps=[visited, carted, bought])`` counts the users of ``visited``, then those of
``visited`` who are also in ``carted``, then those of both who are also in ``bought``: the AND
of the step bitmaps, cumulatively, over one period (``counts``) or a range (``between``), where
a user is at a step when present in every step's union over the range. It says nothing of the
order in which a user did the steps; ``Funnel.ordered`` does, over an event series
(``ordered.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from ..bitmaps.model import UniqueBitmap
from ..core.aio import get_async_connection
from ..core.connection import get_redis_connection
from ..core.drive import adrive, drive
from ..core.periods import Day, Period, get_zone
from ..core.timeutil import When
from ..core.validation import positive_int, shown
from .bounds import MAX_STEPS, MAX_WINDOWS
from .counting import Window, counts_steps
from .naming import checked_name
from .ordered import OrderedFunnel


class Funnel:
    """Users at each step of a path, each step within the previous ones.

    >>> checkout = Funnel(steps=[visited, carted, bought])
    >>> checkout.counts("day")                      # [1200, 300, 45]
    >>> checkout.between(start, end).counts()       # over a range of days
    """

    def __init__(self, steps: Sequence[UniqueBitmap], *, name: str | None = None) -> None:
        if isinstance(steps, (str, bytes)) or not isinstance(steps, Sequence):
            raise TypeError(f"steps must be a list of UniqueBitmap, not {shown(steps)}.")
        for step in steps:
            if not isinstance(step, UniqueBitmap):
                raise TypeError(f"Every step of a Funnel is a UniqueBitmap, not {shown(step)}.")
        if not 1 <= len(steps) <= MAX_STEPS:
            raise ValueError(f"A funnel has 1 to {MAX_STEPS} steps, not {len(steps)}.")
        self.steps: tuple[UniqueBitmap, ...] = tuple(steps)
        #: Its name in the admin (a funnel declared in ``metrics.py`` without one takes the
        #: name it is bound to there).
        self.name: str | None = checked_name(name)

    def __repr__(self) -> str:
        return f"<Funnel {self.name or ''} {[step.name for step in self.steps]}>"

    @property
    def labels(self) -> list[str]:
        """Each step's name, for tables and charts."""
        return [step.name for step in self.steps]

    # Reading

    def counts(self, period: str | Period = "day", when: When = None) -> list[int]:
        """Users at each step in the ``period`` ("hour", "day", "week", "month") holding
        ``when`` (now by default): one round trip on a single node (two with a labelled step)."""
        return self._run([self._period_window(period, when)])[0]

    async def acounts(self, period: str | Period = "day", when: When = None) -> list[int]:
        """``counts`` awaited."""
        return (await self._arun([self._period_window(period, when)]))[0]

    def between(self, start: When | date, end: When | date) -> FunnelRange:
        """The funnel over the days from ``start``'s to ``end``'s (as ``UniqueBitmap.between``
        reads them): a user is at step k when marked in each of the first k steps on any day
        of the range."""
        return FunnelRange(self, start, end)

    def over_time(self, days: int, when: When = None) -> list[tuple[Period, list[int]]]:
        """The funnel of each of the ``days`` days ending with ``when``'s (today by default),
        oldest first, every step keeping days: one round trip on a single node."""
        windows = self._day_windows(days, when)
        counts = self._run([w for _, w in windows])
        return list(zip([day for day, _ in windows], counts, strict=True))

    async def aover_time(self, days: int, when: When = None) -> list[tuple[Period, list[int]]]:
        """``over_time`` awaited."""
        windows = self._day_windows(days, when)
        counts = await self._arun([w for _, w in windows])
        return list(zip([day for day, _ in windows], counts, strict=True))

    @staticmethod
    def ordered(
        series: Any,
        steps: Sequence[Mapping[str, object]],
        user: str = "user",
        within: float = 86400,
        *,
        name: str | None = None,
    ) -> OrderedFunnel:
        """An ordered funnel over the events of ``series`` (see ``OrderedFunnel``)."""
        return OrderedFunnel(series, steps, user=user, within=within, name=name)

    # Planning (checks first: nothing is sent for a bad argument)

    def _period_window(self, period: str | Period, when: When) -> Window:
        return tuple((step._period(period, when),) for step in self.steps)

    def _range_window(self, start: When | date, end: When | date) -> Window:
        return tuple(
            tuple(p for leaf in step.between(start, end).leaves() for p in leaf.periods)
            for step in self.steps
        )

    def _day_windows(self, days: int, when: When) -> list[tuple[Period, Window]]:
        days = positive_int(days, "days")
        if days > MAX_WINDOWS:
            raise ValueError(f"A funnel is counted over at most {MAX_WINDOWS} days, not {days}.")
        today = Day.containing(when, get_zone())
        chosen = [today.shift(back - days + 1) for back in range(days)]
        return [(day, self._period_window(day, None)) for day in chosen]

    def _run(self, windows: list[Window]) -> list[list[int]]:
        client = get_redis_connection()
        return drive(counts_steps(client, self.steps, windows), client)

    async def _arun(self, windows: list[Window]) -> list[list[int]]:
        client = get_async_connection()
        return await adrive(counts_steps(client, self.steps, windows), client)


class FunnelRange:
    """A funnel over a range of days (``Funnel.between``)."""

    def __init__(self, funnel: Funnel, start: When | date, end: When | date) -> None:
        self.funnel = funnel
        self.window = funnel._range_window(start, end)

    def counts(self) -> list[int]:
        """Users at each step over the range: one round trip on a single node."""
        return self.funnel._run([self.window])[0]

    async def acounts(self) -> list[int]:
        """``counts`` awaited."""
        return (await self.funnel._arun([self.window]))[0]
