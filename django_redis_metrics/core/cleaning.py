"""What every cleaner shares: the report of a pass, the cadence, and stray temporary keys."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from weakref import WeakKeyDictionary

from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

from ..conf import conf
from . import catalogue
from .connection import RedisClient, get_redis_connection, is_cluster
from .keys import catalogue_key, temp_pattern, to_str
from .retention import LISTPACK_ENTRIES
from .scripts import script
from .timeutil import When

#: The report name of the stray temporary keys' cleaner.
TEMP_KIND = "temporary"
#: Keys or fields fetched per SCAN/HSCAN step and deleted per command, by default.
BATCH_SIZE = 500


@dataclass
class CleanupReport:
    """What one pass over one kind of metric removed (or, in a dry run, would remove)."""

    kind: str
    dry_run: bool = False
    metrics_checked: int = 0
    items_removed: int = 0
    metrics_removed: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)
    #: Overrides the standard summary, for cleaners that are not about metrics.
    note: str | None = None

    def summary(self) -> str:
        if self.note is not None:
            return f"{self.kind}: {self.note}"
        verb = "would remove" if self.dry_run else "removed"
        return (
            f"{self.kind}: checked {self.metrics_checked}, {verb} {self.items_removed} old "
            f"entries and {len(self.metrics_removed)} empty metrics"
        )


Cleaner = Callable[..., CleanupReport]


def retire(
    client: RedisClient,
    kind: str,
    name: str,
    meta_key: str,
    data_keys: list[str],
    known_fields: Sequence[int] = (),
) -> bool:
    """Forget the metric ``name`` if every one of its ``data_keys`` is empty, atomically
    (``metric_retire.lua``: a racing write is never lost), and take it out of its catalogue
    (on Redis Cluster, where the catalogue is in another slot, just after). ``known_fields``:
    the meta fields the caller read, so that a metric reconfigured meanwhile is kept.
    Returns whether it was retired."""
    inline = catalogue.inline_catalogue(client)
    keys = [meta_key, *data_keys, *([catalogue_key(kind)] if inline else [])]
    if int(script("metric_retire")(client, keys, [name, int(inline), *known_fields])) != 1:
        return False
    return inline or catalogue.unregister(client, kind, name, meta_key)


#: The server's ``hash-max-listpack-entries`` per client (so per pool: one client per process
#: and configuration), read once: a CONFIG GET per pass would be one more command per pass.
_listpack_cache: WeakKeyDictionary[object, int] = WeakKeyDictionary()


def listpack_entries(client: RedisClient) -> int:
    """The server's ``hash-max-listpack-entries``: most fields of a hash kept in the compact
    encoding, the size the cleaners compact a trimmed hash back into.

    Read with ``CONFIG GET`` once per client (cached for the client's life); on Redis Cluster
    every master answers and the smallest value counts (a hash compacted for it is compact on
    any node it moves to). Only where CONFIG is refused (managed services often disable it, an
    ACL may deny it) is Redis's default, ``LISTPACK_ENTRIES`` (128), assumed, and cached too.
    """
    cached = _listpack_cache.get(client)
    if cached is None:
        cached = _listpack_cache[client] = _read_listpack_entries(client)
    return cached


def _read_listpack_entries(client: RedisClient) -> int:
    try:
        if is_cluster(client):
            found = client.config_get(
                "hash-max-listpack-entries", target_nodes=RedisCluster.PRIMARIES
            )
        else:
            found = client.config_get("hash-max-listpack-entries")
    except ResponseError:  # managed services often disable CONFIG; an ACL may deny it
        return LISTPACK_ENTRIES
    values = [int(to_str(value)) for value in _config_values(found)]
    return min(values) if values else LISTPACK_ENTRIES


def _config_values(found: object) -> list[bytes | str]:
    """The values of a CONFIG GET reply: ``{name: value}``, or on a cluster queried on several
    nodes, ``{node: {name: value}}``."""
    if not isinstance(found, dict):
        return []
    values: list[bytes | str] = []
    for value in found.values():
        if isinstance(value, dict):
            values += _config_values(value)
        elif isinstance(value, bytes | str):
            values.append(value)
    return values


def compact(client: RedisClient, key: str, entries: int) -> bool:
    """Rewrite the hash ``key`` if it shrank into the compact encoding's size (see
    ``hash_compact.lua``): after a trim, its memory really returns."""
    return bool(int(script("hash_compact")(client, [key], [entries])))


def due(precision: int, passes: int) -> bool:
    """Whether a precision is cleaned on pass ``passes``: every pass for precisions up to a
    minute, every ``precision // 60`` passes for coarser ones (Redis in Action's cadence)."""
    return passes % max(precision // 60, 1) == 0


#: Grace period given to a stray temporary key before Redis drops it, in seconds.
STRAY_TEMP_TTL = 60
#: The version of the temporary keys' layout the sweep marker vouches for: every temporary key
#: this version makes gets its TTL in the script that writes it.
SWEEP_VERSION = "1"


def sweep_marker_key() -> str:
    """The key saying the stray temporary keys were swept: ``<prefix>:cleaner:temporary``
    (no braces, so no metric key and no temporary key can ever be it)."""
    return f"{conf.PREFIX}:cleaner:temporary"


def forget_sweep(client: RedisClient | None = None) -> None:
    """Have the next pass sweep the whole database for stray temporary keys again
    (``clean_metrics --sweep-temporary``)."""
    (client or get_redis_connection()).delete(sweep_marker_key())


def clean_temporary(
    client: RedisClient | None = None,
    *,
    now: When = None,
    passes: int = 0,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
) -> CleanupReport:
    """Give stray temporary keys (left without a TTL) a short TTL, once per database.

    Temporary keys are ``<prefix>:tmp:{<name>}:<kind>:<token>``, a namespace no metric key
    reaches, whatever its name or values (see ``keys.py``), and every one this version makes
    gets its TTL in the very script that writes it (``PX``/``PEXPIRE`` in the same Lua call):
    none can be left without one. So a pass reads one key, the sweep marker, and costs
    O(1), not O(the database's keys). Only where the marker is missing (a database an earlier
    version wrote to, or after ``clean_metrics --sweep-temporary``) does a pass SCAN the whole
    keyspace (every master of a cluster) in batches, never KEYS, then set the marker. Keys get
    ``STRAY_TEMP_TTL`` seconds rather than being deleted, so an operation still using one can
    finish.
    """
    client = client or get_redis_connection()
    report = CleanupReport(TEMP_KIND, dry_run=dry_run)
    marker = sweep_marker_key()
    if to_str(client.get(marker) or b"") == SWEEP_VERSION:
        report.note = "swept already: every temporary key is written with its TTL"
        return report
    keys = list(client.scan_iter(match=temp_pattern(), count=batch_size))
    report.metrics_checked = len(keys)
    for index in range(0, len(keys), batch_size):
        chunk = keys[index : index + batch_size]
        pipe = client.pipeline(transaction=False)
        for key in chunk:
            pipe.ttl(key)
        stray = [key for key, ttl in zip(chunk, pipe.execute(), strict=True) if int(ttl) == -1]
        if stray and not dry_run:
            pipe = client.pipeline(transaction=False)
            for key in stray:
                pipe.expire(key, STRAY_TEMP_TTL)
            pipe.execute()
        report.items_removed += len(stray)
        report.details += [
            f"temporary key {to_str(key)!r}: no TTL, expires in {STRAY_TEMP_TTL} s" for key in stray
        ]
    if not dry_run:
        client.set(marker, SWEEP_VERSION)
    verb = "would give" if dry_run else "gave"
    report.note = (
        f"swept the database: {report.metrics_checked} temporary keys; {verb} "
        f"{report.items_removed} stray ones (left without a TTL) {STRAY_TEMP_TTL} s to live"
    )
    return report
