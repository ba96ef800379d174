"""An estimate's periods that Redis no longer holds, counted from the archive (``archive/``).

The archive keeps each period's HyperLogLog registers (the key's string, as ``GET`` gives it),
so a count reaching archived periods is made in Redis as any other: the registers of every
period of the count are set into temporary keys of the estimate's slot (with a TTL, unlinked
after), those of the periods Redis still holds read from their keys (of each series, for a
labelled estimate read whole: they are listed in the same round trip), and one ``PFCOUNT``
(merged in bounded steps past ``MAX_COUNT_KEYS`` keys) counts their union, with the error of
a single period. Three or four round trips, whatever the deployment.

The archive's models are imported when a count needs them (this module is imported with the
models, before Django's apps are ready).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Protocol

from ..archive.horizon import is_archived
from ..core.gather import pipelined_steps
from ..core.keys import catalogue_key, metric_key, temp_key, to_str
from ..core.labels.labelling import SEPARATOR, series_range
from ..core.labels.uniting import checked
from ..core.periods import Period
from ..core.steps import Op, Pipe, Steps
from .bounds import TEMP_TTL_MS
from .keys import KIND
from .retention import retention

#: Most archived HyperLogLogs one count reads (each at most about 12 KB: 24 MB at most).
MAX_ARCHIVED_REGISTERS = 2000


class Estimate(Protocol):
    @property
    def name(self) -> str: ...


def split_archived(periods: Sequence[Period], now: float) -> tuple[list[Period], list[Period]]:
    """``periods`` as (those Redis holds, those it no longer does) by ``ESTIMATE_RETENTION``."""
    keep = retention()
    held: list[Period] = []
    gone: list[Period] = []
    for period in periods:  # one pass: a range may plan thousands of periods
        (gone if is_archived(period, keep, now) else held).append(period)
    return held, gone


def archived_registers(name: str, periods: Sequence[Period]) -> list[bytes]:
    """The archived registers of ``periods`` (of every series of ``name`` read whole)."""
    from ..archive.reading import archived_rows

    found: list[bytes] = []
    for period_name in sorted({p.name for p in periods}):
        starts = [int(p.start_ts) for p in periods if p.name == period_name]
        rows = archived_rows(KIND, name, period_name, starts, data=True)
        found += [bytes(data) for each in rows.values() for _count, data in each if data]
        if len(found) > MAX_ARCHIVED_REGISTERS:
            raise ValueError(
                f"A count of {name!r} reads at most {MAX_ARCHIVED_REGISTERS:,} archived periods "
                "(of all its series): count a shorter range, or one series (labels(...))."
            )
    return found


def archived_count_steps(
    estimate: Estimate, held: Sequence[Period], registers: Sequence[bytes], count: Any
) -> Steps[int]:
    """Distinct items of ``held`` (periods Redis holds) and ``registers`` (archived), in
    Redis; ``count(keys, home)``: the steps counting keys of one slot (``query.py``'s)."""
    name = estimate.name
    whole = SEPARATOR not in name
    listing = [Op("zrangebylex", catalogue_key(KIND), *series_range(name))] if whole else []
    own = [Op("get", metric_key(KIND, name, p.name, p.suffix)) for p in held]
    replies = checked((yield from pipelined_steps([*listing, *own])))
    values = [v for v in replies[len(listing) :] if v]
    series = [to_str(m) for m in replies[0]] if whole else []
    if series and held:
        gets = [Op("get", metric_key(KIND, s, p.name, p.suffix)) for s in series for p in held]
        values += [v for v in checked((yield from pipelined_steps(gets))) if v]
    return (yield from registers_count_steps(name, [*values, *registers], count))


def registers_count_steps(name: str, registers: Sequence[bytes], count: Any) -> Steps[int]:
    """Distinct items of the union of ``registers`` (HyperLogLogs), counted in Redis: each
    written to a temporary key of ``name``'s slot, counted by ``count(keys, home)``, removed."""
    if not registers:
        return 0
    token = uuid.uuid4().hex
    temps = [temp_key(KIND, name, f"archived:{token}:{i}") for i in range(len(registers))]
    yield Pipe([Op("set", t, v, px=TEMP_TTL_MS) for t, v in zip(temps, registers, strict=True)])
    answer = int((yield from count(temps, name)))
    yield Op("unlink", *temps)  # one slot: the estimate's
    return answer
