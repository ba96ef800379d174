"""How much one step of a bitmap read may do in Redis, how long its scratch keys live ("nothing
blocks Redis for long"; temporary keys always carry a TTL), how long past unions stay cached."""

from __future__ import annotations

from ..core.validation import shown

#: TTL of temporary BITOP results: they are deleted by the script that makes them, this is a net.
TEMP_TTL_MS = 60_000
#: At most this many source keys per script call: a query reading more is built in steps
#: (``bitmap_union.lua``), its longest unions first.
MAX_SCRIPT_SOURCES = 32
#: Redis Cluster: the series of a labelled bitmap whose unions travel through the client
#: together (one round trip out of their slots, one into the metric's), which bounds the memory
#: a read of the whole metric holds at once.
UNITE_GROUP = 32
#: Redis Cluster: most exported bitmaps one import script call ORs into the metric's slot.
IMPORTS_PER_CALL = 8


def validate_cache_ttl(value: object) -> int:
    """``BITMAP_CACHE_TTL``: seconds, 0 to disable the cache of past unions."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"must be a non-negative int number of seconds, not {shown(value)}.")
    return value
