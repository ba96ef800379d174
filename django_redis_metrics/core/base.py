"""What every kind of metric shares: a name, a kind, equality by name, and catalogue upkeep."""

from __future__ import annotations

from typing import Any, ClassVar

from . import catalogue
from .drive import adrive
from .keys import metric_key
from .steps import Op, Steps


class Metric:
    """A named metric of one ``KIND``; two instances with the same name are the same metric.

    Subclasses set ``KIND`` (the key segment and catalogue of the kind), ``LABEL`` (how
    messages name it) and ``name``, and describe their configuration in ``_describe``.
    """

    KIND: ClassVar[str]
    LABEL: ClassVar[str]
    name: str

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
