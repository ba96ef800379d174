"""What every kind of metric shares: a name, a kind, equality by name, catalogue upkeep, and
labels (``core/labels/labelling.py``): a labelled metric's series are metrics of its kind."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Self

from ..conf import conf
from ..exceptions import MetricDoesNotExist, MultipleMetricsReturned
from . import catalogue
from .drive import adrive, drive
from .keys import metric_key
from .labels.labelling import OTHER, label_values, other_name, series_name, validate_label_names
from .steps import Op, Steps
from .validation import series_cap

#: Most series instances a labelled metric keeps at hand (``labels()`` answers from them).
SERIES_CACHE = 10_000


class Metric:
    """A named metric of one ``KIND``; two instances with the same name are the same metric.

    Subclasses set ``KIND`` (the key segment and catalogue of the kind), ``LABEL`` (how
    messages name it) and ``name``, and describe their configuration in ``_describe``.
    """

    KIND: ClassVar[str]
    LABEL: ClassVar[str]
    #: Each model's own, given by its ``objects`` manager (``core/catalogue.py``), as Django's.
    DoesNotExist: ClassVar[type[MetricDoesNotExist]]
    MultipleObjectsReturned: ClassVar[type[MultipleMetricsReturned]]
    name: str
    #: The labels this metric is declared with (``labels=``); empty for a plain metric.
    label_names: tuple[str, ...] = ()
    #: The metric a series belongs to (``None`` for a metric itself).
    family: Metric | None = None
    #: A series' ``(label, value)`` pairs, in declaration order.
    label_pairs: tuple[tuple[str, str], ...] = ()
    _max_series: int | None = None
    _series: dict[tuple[tuple[str, str], ...], Self] | None = None

    def _declare_labels(self, labels: Sequence[str], max_series: int | None) -> None:
        """Record ``labels=`` and ``max_series=`` (validated) of a metric's declaration."""
        what = f"{self.LABEL} {self.name!r}"
        self.label_names = validate_label_names(labels, what) if labels else ()
        if max_series is not None:
            self._max_series = series_cap(max_series, "max_series")

    @property
    def max_series(self) -> int:
        """Most series this metric keeps (``max_series=``, else the ``MAX_SERIES`` setting)."""
        family = self.family or self
        if family._max_series is not None:
            return family._max_series
        return int(conf.MAX_SERIES)

    def labels(self, **values: object) -> Self:
        """The series of this metric with these label values (every declared label required;
        values are str or int): a metric of the same kind, with the same methods."""
        if self.family is not None:
            raise TypeError(f"{self.LABEL.capitalize()} series {self.name!r} has no labels().")
        pairs = label_values(self.label_names, values, f"{self.LABEL} {self.name!r}")
        return self.series_for(pairs)

    def series_for(self, pairs: tuple[tuple[str, str], ...], *, other: bool = False) -> Self:
        """The series of this metric with these (already checked) pairs, or its ``__other__``
        series; configured as this metric. The same pairs give the same object (up to
        ``SERIES_CACHE`` of them), so writes to one series merge in the sender."""
        cache = self._series
        if cache is None:
            cache = self._series = {}
        key = (("", OTHER),) if other else pairs
        found = cache.get(key)
        if found is None:
            if len(cache) >= SERIES_CACHE:
                cache.clear()
            found = cache[key] = object.__new__(type(self))
            found.__dict__.update(self.__dict__)  # the configuration, not the series cache
            found.name = other_name(self.name) if other else series_name(self.name, pairs)
            found.family, found.label_pairs, found._series = self, pairs, None
        return found

    def other_series(self) -> Self:
        """Where writes of label sets past ``max_series`` go."""
        return self.series_for((), other=True)

    def delete(self) -> None:
        """Remove every key of this metric and its catalogue entry (each kind says how)."""
        raise NotImplementedError

    def delete_series(self) -> int:
        """Delete every series of this metric (each as its kind's ``delete()`` does); the number
        deleted. A metric's ``delete()`` calls it: deleting ``hits`` deletes its series too."""
        if self.family is not None:
            return 0
        from .labels.aggregate import (
            series_of_steps,  # aggregate reads the series this module makes
        )

        found = drive(series_of_steps(self))
        for series in found:
            series.delete()
        return len(found)

    def refuse_unlabelled_write(self) -> None:
        """A ``TypeError`` if this is a labelled metric itself: its writes go to a series."""
        if self.label_names:
            example = ", ".join(f"{label}=..." for label in self.label_names)
            raise TypeError(
                f"The {self.LABEL} {self.name!r} is labelled by {self.label_names!r}: write to "
                f"one of its series, e.g. .labels({example})."
            )

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {self._describe()}>"

    def _describe(self) -> str:
        return ""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Metric) and other.KIND == self.KIND and other.name == self.name

    def __hash__(self) -> int:
        return hash((self.KIND, self.name))

    @property
    def meta_key(self) -> str:
        """The hash of this metric's stored configuration; also its catalogue marker."""
        return metric_key(self.KIND, self.name, "meta")

    def _listing_steps(self, unlisted: Any) -> Steps[None]:
        """A write's follow-up: on Redis Cluster, where the catalogue lives in another slot, a
        metric its script reported ``unlisted`` is listed now (on a single node the script
        listed it, and reports nothing unlisted); the write's result is ``None``."""
        if int(unlisted):
            yield from catalogue.listing_steps(self.KIND, self.name, self.meta_key)

    def _exists_steps(self) -> Steps[bool]:
        return bool((yield Op("exists", self.meta_key)))

    async def aexists(self) -> bool:
        """Whether the metric holds data (its meta hash exists)."""
        return await adrive(self._exists_steps())
