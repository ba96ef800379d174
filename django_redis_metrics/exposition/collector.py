"""A ``prometheus_client`` collector reading every metric the catalogues list, at scrape time.

One family per metric, labelled by its series' labels: a counter ``hits`` labelled by view
and status is ``<namespace>_hits_total{view="home",status="2xx"}``, so PromQL can
``sum by (view)``. Each registered kind drafts its metrics' families (``Kind.exposition``, in
its package's ``exposition.py``) as a generator of steps (``core/steps.py``): a few pages of
its catalogue, then one read per series. The gather driver runs every kind's together, so a
scrape costs a few pipelined round trips (``CHUNK`` reads each), and every process of the
site and every scraper see the same numbers. The families are then named (``names.py``:
sanitised, one family per name) and built for ``prometheus_client`` to render.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from prometheus_client.core import Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample

from ..core.drive import gather
from ..kinds import registered
from .families import NAMESPACE, SUFFIXES, Draft
from .names import Claims, family_name, left_out, sanitise


class MetricsCollector(Collector):
    """Collects every registered kind of metric from Redis when the registry is scraped."""

    def __init__(self, namespace: str = NAMESPACE) -> None:
        self.namespace = namespace

    def collect(self) -> Iterator[Metric]:
        with collection_paused():
            drafted = gather([kind.exposition() for kind in registered() if kind.exposition])
            claims = Claims()
            families: list[Metric] = []
            for drafts in drafted:
                if isinstance(drafts, Exception):
                    raise drafts
                families += self._families(drafts, claims)
        yield from families

    def _families(self, drafts: Iterable[Draft], claims: Claims) -> Iterator[Metric]:
        """One kind's families, named in a stable order (``names.py``): the drafts come in
        name order (the catalogue's), names needing no change first."""
        keyed = [(sanitise(draft.metric), draft) for draft in drafts]  # in name order
        unchanged = [(clean, draft) for clean, draft in keyed if clean == draft.metric]
        changed = [(clean, draft) for clean, draft in keyed if clean != draft.metric]
        for clean, draft in unchanged + changed:
            family = build(draft, family_name(self.namespace, clean), claims)
            if family is not None:
                yield family


@contextmanager
def collection_paused() -> Iterator[None]:
    """Python's cyclic garbage collector paused while a scrape builds its objects (several
    per series, none of them cyclic): a large scrape otherwise triggers full collections
    that walk the whole heap again and again as it grows, more than half of its CPU time at
    100,000 metrics (``benchmarks/bench_exposition_series.py``). Reference counting still
    frees what is dropped; anything cyclic meanwhile waits for the next collection. Left
    as it was found (a process that disabled the collector keeps it disabled)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def build(draft: Draft, name: str, claims: Claims) -> Metric | None:
    """The family of ``draft`` under ``name`` (its metric's, sanitised), or ``None`` (logged)
    when that name or one of its sample names is already claimed."""
    if draft.type == "counter" and name.endswith("_total"):
        name = name[: -len("_total")]  # as prometheus_client names a counter family
    if not claims.claim([name] + [name + suffix for suffix in SUFFIXES[draft.type]]):
        left_out(draft.kind, draft.metric, name)
        return None
    family = Metric(name, draft.documentation, draft.type)
    suffixes, labels, values = draft.suffixes, draft.labels, draft.values
    if len(values) == 1:  # a plain metric: one sample
        family.samples = [Sample(name + suffixes[0], labels[0], values[0])]
        return family
    names = {suffix: name + suffix for suffix in set(suffixes)}
    family.samples = [
        Sample(names[suffix], labelled, value)
        for suffix, labelled, value in zip(suffixes, labels, values, strict=True)
    ]
    return family
