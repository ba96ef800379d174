"""The Dashboard page: the tiles ``DASHBOARD`` names (and the banner of firing alerts), loaded
in at most three round trips.

One pipeline for the catalogue names the tiles look up (by prefix, so only matching names
travel), one for the stored configuration of every metric they read, one for all their reads;
a step nobody needs is skipped. However many views, series or status counters there are, the
round trips stay three; each lookup returns at most ``MAX_NAMES`` names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.module_loading import import_string

from ..conf import conf
from ..core.base import Metric
from ..core.drive import drive
from ..core.gather import gather_steps
from ..core.keys import catalogue_key, metric_key, to_str
from ..core.steps import Op, Pipe, Steps
from ..core.validation import shown
from . import alerts, common, health_tiles, labels, tiles
from .tilebase import Env, Links, Lookup, Reads, Tile
from .viewsource import from_meta

#: Tiles by the name ``DASHBOARD`` gives them.
TILES: dict[str, type[Tile]] = {
    tile.name: tile
    for tile in (
        tiles.HitsTile,
        tiles.ActiveUsersTile,
        tiles.TopViewsTile,
        health_tiles.ErrorRateTile,
        health_tiles.SlowestViewsTile,
        tiles.BusiestEventsTile,
    )
}
#: Most names one lookup reads from a catalogue.
MAX_NAMES = 5000


def tile_class(spec: object) -> type[Tile]:
    if isinstance(spec, type) and issubclass(spec, Tile):
        return spec
    if isinstance(spec, str) and spec in TILES:
        return TILES[spec]
    if isinstance(spec, str) and "." in spec:
        try:
            found = import_string(spec)
        except ImportError as exc:
            raise ValueError(f"Cannot import the dashboard tile {shown(spec)}: {exc}") from None
        if isinstance(found, type) and issubclass(found, Tile):
            return found
        raise TypeError(f"{shown(spec)} is not a subclass of {Tile.__module__}.Tile.")
    raise ValueError(
        f"Unknown dashboard tile {shown(spec)}; use one of {', '.join(TILES)}, "
        "or the dotted path of a Tile subclass."
    )


def resolve_tiles(value: object) -> list[Tile]:
    """``DASHBOARD`` as tiles: each entry a tile name, a dotted path or class, or a dict
    ``{"tile": ..., **options}``; a clear ``TypeError``/``ValueError`` for anything else."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"DASHBOARD must be a list of tiles, not {shown(value)}.")
    found = []
    for entry in value:
        options: dict[str, Any] = {}
        if isinstance(entry, Mapping):
            options = dict(entry)
            if "tile" not in options:
                raise ValueError(
                    f"A DASHBOARD entry given as a dict needs a 'tile': {shown(entry)}."
                )
            entry = options.pop("tile")
        found.append(tile_class(entry)(**options))
    return found


def lookup_names(lookups: list[Lookup]) -> Steps[dict[Lookup, list[str]]]:
    """The catalogued names each lookup asks for: one round trip (a prefix range of the
    catalogue's sorted set, never the whole of it)."""
    if not lookups:
        return {}
    ops = []
    for lookup in lookups:
        prefix = lookup.prefix.encode()
        low = b"[" + prefix if prefix else b"-"
        high = b"[" + prefix + b"\xff" if prefix else b"+"
        ops.append(Op("zrangebylex", catalogue_key(lookup.kind), low, high, start=0, num=MAX_NAMES))
    return {
        lookup: [to_str(name) for name in names]
        for lookup, names in zip(lookups, (yield Pipe(ops)), strict=True)
    }


def configured(wanted: list[tuple[type[Any], str]]) -> Steps[dict[tuple[str, str], Metric | None]]:
    """The wanted metrics (or series of labelled ones) as their writers stored them (``None``:
    nothing stored): one round trip."""
    if not wanted:
        return {}
    replies = yield Pipe(
        [Op("hgetall", metric_key(model.KIND, name, "meta")) for model, name in wanted]
    )
    metrics: dict[tuple[str, str], Metric | None] = {}
    for (model, name), meta in zip(wanted, replies, strict=True):
        try:
            metrics[model.KIND, name] = from_meta(model, name, meta) if meta else None
        except (LookupError, ValueError):
            metrics[model.KIND, name] = None
    return metrics


def render_tiles(chosen: list[Tile], env_links: Links, now: float) -> list[dict[str, Any]]:
    """Every tile's title, template and context."""
    return drive(_tiles_steps(chosen, env_links, now))


def _tiles_steps(chosen: list[Tile], env_links: Links, now: float) -> Steps[list[dict[str, Any]]]:
    lookups = sorted({lookup for tile in chosen for lookup in tile.lookups()})
    found = yield from lookup_names(lookups)
    wanted = list(dict.fromkeys(item for tile in chosen for item in tile.wants(found)))
    metrics = yield from configured(wanted)
    env = Env(now=now, links=env_links, found=found)
    reads = Reads()
    finishes = [tile.queue(reads, metrics, env) for tile in chosen]
    replies = (yield Pipe(reads.ops)) if reads.ops else []
    return [
        {"tile": tile, "template": tile.template, "context": finish(replies)}
        for tile, finish in zip(chosen, finishes, strict=True)
    ]


def _raising(steps: Steps[list[Any]]) -> Steps[list[Any]]:
    """``gather``'s results, the first exception among them raised."""
    results = yield from steps
    for result in results:
        if isinstance(result, Exception):
            raise result
    return results


def dashboard_page(request: HttpRequest, context: dict[str, Any]) -> TemplateResponse:
    now = common.current_time()
    namespace = request.resolver_match.namespace if request.resolver_match else "admin"
    chosen = resolve_tiles(conf.DASHBOARD)
    # The banner of firing alerts is read with the tiles' first round trip (gather).
    rendered, firing = drive(
        _raising(gather_steps([_tiles_steps(chosen, Links(namespace), now), alerts.firing_steps()]))
    )
    context.update(
        title="Dashboard",
        tiles=rendered,
        firing_alerts=firing,
        alerts_url=reverse(f"{namespace}:django_redis_metrics_alertsmetric_changelist"),
        zone_label=labels.zone_label(now),
        as_of=labels.instant_label(now, 1),
    )
    return TemplateResponse(request, "django_redis_metrics/admin/dashboard.html", context)
