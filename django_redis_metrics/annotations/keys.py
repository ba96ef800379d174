"""Where annotations live: one sorted set and its sequence, under ``PREFIX``, in one slot.

``<prefix>:annotations:{log}`` scores each annotation by its time (epoch seconds); its member
is a 12-digit sequence number (so that annotations of the same second keep their order and
never merge) followed by the JSON of its text and tags. ``<prefix>:annotations:{log}:seq``
hands out the numbers. Both carry the hash tag ``{log}``: on Redis Cluster the write script
touches one slot. No metric kind is ``annotations``, so no metric key can be one of these.
"""

from __future__ import annotations

from ..conf import conf

KIND = "annotations"


def log_key() -> str:
    """The sorted set of every annotation kept."""
    return f"{conf.PREFIX}:{KIND}:{{log}}"


def seq_key() -> str:
    """The counter numbering annotations as they are written."""
    return f"{log_key()}:seq"
