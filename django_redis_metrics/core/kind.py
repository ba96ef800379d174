"""A kind of metric as the rest of the app sees it: one entry of the registry (``kinds.py``).

Each kind describes itself once, in its own package's ``kind.py``: its model (whose ``KIND``
names the kind), its cleaner, the Prometheus families it exposes and the admin pages that show
it. The cleaner loop, the exposition collector and the admin iterate the registry, so none of
them names a kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .base import Metric
from .cleaning import Cleaner
from .steps import Steps

if TYPE_CHECKING:
    from prometheus_client.core import Metric as Family


class ReadPlan(Protocol):
    """The reads of one scrape (``exposition.collector.Plan``): a kind queues a read's steps
    (``core/steps.py``) and what to do with its answer; every kind's reads then travel
    together (the gather driver), in a few pipelined round trips."""

    def add(self, steps: Steps[Any], use: Callable[[Any], None]) -> None: ...


#: Queues a kind's reads on the scrape's plan and returns the families those reads fill.
Exposition = Callable[[ReadPlan], Iterable["Family"]]


@dataclass(frozen=True)
class Kind:
    """One kind of metric: what the app's kind-agnostic parts need to know of it."""

    #: The model class; its ``KIND`` is the kind's name (keys, catalogue, cleaner report).
    model: type[Metric]
    #: One cleaning pass over every metric of the kind (``clean_metrics`` runs them in order).
    cleaner: Cleaner
    #: Its Prometheus families, or ``None`` when the kind exposes none.
    exposition: Exposition | None = None
    #: The dotted path of its admin pages (an ``admin.common.KindPages``), or ``None``. A path,
    #: not the object: the pages import the admin, which is loaded after the models.
    admin: str | None = None

    @property
    def name(self) -> str:
        return self.model.KIND
