"""What the kinds of metric kept as one hash field per epoch-aligned slice share (``Counter``,
``Statistic``, ``Gauge``): configuration, keys, the write call of one slice, deletion.

Each precision is a hash of ``slice start -> the slice's value``; the write script enforces the
retention (``core/lua/lib/slice_window.lua``) and the meta hash remembers each precision's
samples, as a counter's does.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, ClassVar, Self

from ..conf import conf
from . import catalogue
from .base import Metric
from .batch import Batch, ScriptCall, run_calls
from .connection import AnyRedisClient, RedisClient, get_redis_connection
from .drive import drive
from .keys import catalogue_key, metric_key, to_str, validate_name
from .retention import MAX_AHEAD, validate_precisions, validate_samples
from .scripts import LuaScript
from .steps import Op, Pipe, Steps
from .timeutil import When, slice_start, slice_starts, to_timestamp
from .validation import integer, positive_int


@lru_cache(maxsize=32)
def _settings_precisions(value: tuple[int, ...]) -> tuple[int, ...]:
    """A precisions setting validated once per distinct value, not on every write."""
    return validate_precisions(value)


def precision_samples(meta: Mapping[Any, Any]) -> dict[int, int]:
    """``{precision: samples}`` from a meta hash (its other fields skipped)."""
    return {
        int(to_str(key)): int(to_str(value)) for key, value in meta.items() if to_str(key).isdigit()
    }


class SlicedMetric(Metric):
    """A metric kept at several precisions, the newest ``samples`` slices of each; defaults
    from the settings named by ``PRECISIONS_SETTING`` and ``SAMPLES_SETTING``."""

    PRECISIONS_SETTING: ClassVar[str]
    SAMPLES_SETTING: ClassVar[str]

    def __init__(
        self,
        name: str,
        precisions: Sequence[int] | None = None,
        samples: int | None = None,
        *,
        labels: Sequence[str] = (),
        max_series: int | None = None,
    ) -> None:
        self.name = validate_name(name, f"{self.LABEL} name")
        self._precisions = None if precisions is None else validate_precisions(precisions)
        self._samples = None if samples is None else validate_samples(samples)
        self._declare_labels(labels, max_series)

    @classmethod
    def from_meta(cls, name: str, meta: Mapping[Any, Any]) -> Self:
        """The metric configured as its stored meta hash says (precision -> samples)."""
        stored = precision_samples(meta)
        if not stored:
            raise LookupError(f"{cls.LABEL.capitalize()} {name!r} has no stored configuration.")
        return cls(name, precisions=list(stored), samples=max(stored.values()))

    def _describe(self) -> str:
        return f"precisions={self.precisions} samples={self.samples}"

    @property
    def precisions(self) -> tuple[int, ...]:
        """This metric's precisions, else its precisions setting (read now)."""
        if self._precisions is not None:
            return self._precisions
        value = conf.get(self.PRECISIONS_SETTING)
        try:
            return _settings_precisions(tuple(value))
        except TypeError:  # unhashable or ill-typed: let the validator say what is wrong
            return validate_precisions(value)

    @property
    def samples(self) -> int:
        """Slices kept per precision, else its samples setting (read now)."""
        if self._samples is not None:
            return self._samples
        return validate_samples(conf.get(self.SAMPLES_SETTING))

    def key(self, precision: int) -> str:
        """The hash of one precision's slices."""
        return metric_key(self.KIND, self.name, precision)

    def _check_precision(self, precision: object) -> int:
        precision = integer(precision, "precision", unit="seconds")
        if precision not in self.precisions:
            raise ValueError(
                f"{self.LABEL.capitalize()} {self.name!r} has no precision {precision}; "
                f"it keeps {', '.join(map(str, self.precisions))}."
            )
        return precision

    def _call(
        self,
        script: LuaScript,
        args: Sequence[str | int],
        timestamp: float,
        client: AnyRedisClient,
    ) -> ScriptCall:
        """One atomic script call writing the slice holding ``timestamp`` at every precision:
        ``args`` after the common four (name, samples, catalogue flag, ``MAX_AHEAD``), then
        each precision and its slice start. ``client`` only tells whether the catalogue can
        be written by the script (single node) or after it (cluster)."""
        inline = catalogue.inline_catalogue(client)
        base = metric_key(self.KIND, self.name)
        precisions = self.precisions
        keys = [f"{base}:meta", *(f"{base}:{p}" for p in precisions)]
        call_args: list[str | int] = [self.name, self.samples, int(inline), MAX_AHEAD, *args]
        for precision in precisions:
            call_args += [precision, slice_start(timestamp, precision)]
        if inline:
            keys.append(catalogue_key(self.KIND))
        return ScriptCall(script, keys, call_args, self._listing_steps)

    @staticmethod
    def _send(make: Callable[[RedisClient], ScriptCall], batch: Batch | None) -> None:
        """The call ``make(client)`` queued in ``batch``, or run now: one round trip."""
        client = get_redis_connection()
        if batch is not None:
            batch.add(make(client))
        else:
            run_calls(client, [make(client)])

    def delete(self) -> None:
        """Remove every slice of this metric and its catalogue entry, and its series."""
        self.delete_series()
        client = get_redis_connection()
        stored = precision_samples(dict.fromkeys(client.hkeys(self.meta_key), 0))
        precisions = set(stored) | set(self.precisions)
        client.unlink(self.meta_key, *(self.key(p) for p in sorted(precisions)))
        catalogue.unregister(client, self.KIND, self.name, self.meta_key)

    def exists(self) -> bool:
        return drive(self._exists_steps())

    def _slices(self, precision: int, chunk: int = 1000) -> list[tuple[int, str]]:
        """Every stored ``(slice start, value)`` of ``precision``, oldest first (HSCAN)."""
        return drive(self._slices_steps(precision, chunk))

    def _recent_steps_of(
        self, precision: int, count: int | None, until: When, most: int, chunk: int
    ) -> Steps[list[tuple[int, Any]]]:
        """``recent``'s reads: the newest ``count`` (default: ``samples``, at most ``most``)
        slice starts of ``precision`` up to ``until``, each with its stored value or ``None``;
        HMGETs of ``chunk`` fields, one round trip."""
        precision = self._check_precision(precision)
        count = self.samples if count is None else positive_int(count, "count")
        if count > most:
            raise ValueError(f"recent() reads at most {most} slices, not {count}.")
        starts = slice_starts(precision, count, to_timestamp(until, "until"))
        key = self.key(precision)
        chunks = range(0, len(starts), chunk)
        replies = yield Pipe([Op("hmget", key, starts[i : i + chunk]) for i in chunks])
        values = [value for part in replies for value in part]
        return list(zip(starts, values, strict=True))

    def _slices_steps(self, precision: int, chunk: int) -> Steps[list[tuple[int, str]]]:
        key = self.key(precision)
        data: dict[Any, Any] = {}
        cursor = 0
        while True:
            cursor, found = yield Op("hscan", key, cursor, count=chunk)
            data.update(found)
            if not int(cursor):
                return sorted((int(to_str(start)), to_str(value)) for start, value in data.items())
