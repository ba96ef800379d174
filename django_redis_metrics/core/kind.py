"""A kind of metric as the rest of the app sees it: one entry of the registry (``kinds.py``).

Each kind describes itself once, in its own package's ``kind.py``: its model (whose ``KIND``
names the kind), its cleaner, the Prometheus families it exposes and the admin pages that show
it. The cleaner loop, the exposition collector and the admin iterate the registry, so none of
them names a kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base import Metric
from .cleaning import Cleaner
from .steps import Steps

if TYPE_CHECKING:
    from ..exposition.families import Draft


#: A kind's reads for a scrape, as steps (``core/steps.py``) that the collector runs with
#: every other kind's (the gather driver): they return one draft family per metric.
Exposition = Callable[[], Steps[list["Draft"]]]


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
    #: The dotted path of its archiver (an ``archive.base.Archiver``: one pass writing its
    #: closed slices or periods to the archive's tables), or ``None`` when it keeps no history.
    #: A path, for the same reason: archivers import the Django models.
    archiver: str | None = None

    @property
    def name(self) -> str:
        return self.model.KIND
