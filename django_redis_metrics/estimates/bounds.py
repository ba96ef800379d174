"""How much one step of an estimate's count may do in Redis, and how long its scratch keys live
("nothing blocks Redis for long"; temporary keys always carry a TTL)."""

from __future__ import annotations

#: Most keys one command merges: a dense HyperLogLog is 16,384 registers, about 12 KB.
MAX_COUNT_KEYS = 64
#: TTL of the temporary union of a long range (deleted by its last step; this is a net).
TEMP_TTL_MS = 60_000
#: Redis Cluster: the series of a labelled estimate whose HyperLogLogs travel through the client
#: together (one round trip out of their slots, one into the metric's): at most about 3 MB.
UNITE_GROUP = 256
#: Redis Cluster: most exported HyperLogLogs one import script call merges (about 768 KB).
IMPORTS_PER_CALL = 64
