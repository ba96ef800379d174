"""``SENDER["REPLICAS"]``: a batch counts as stored once replicas hold it.

Redis replicates asynchronously: a master acknowledges a write before its replicas have it,
and a failover (a SIGKILL of the master, or ``SENTINEL FAILOVER``) can promote a replica that
never received the last writes; the old master's copy is then thrown away when it becomes the
new master's replica. ``min-replicas-to-write`` narrows that window but cannot close it.

After a batch, the sender writes one marker key and sends ``WAIT`` on the same connection
(``WAIT`` counts the replicas that acknowledged that connection's last write; the replication
stream is ordered, so they hold the batch too). Fewer than asked within half of
``SENDER["TIMEOUT"]`` raise :class:`~django_redis_metrics.exceptions.NotReplicated`, an
outage: the batch is kept and sent again, and its idempotent calls (``sender._numbered``) are
applied on the new master exactly once, whether the old one had passed them on or not.
"""

from __future__ import annotations

from redis.exceptions import ResponseError

from ..conf import conf
from ..core.connection import RedisClient
from ..core.drive import on_one_connection
from ..exceptions import NotReplicated

#: How long the marker key lives (ms): long enough to outlast a WAIT, never a lasting key.
MARKER_TTL_MS = 60_000


def marker_key() -> str:
    """The key written before ``WAIT``: one per prefix, shared by every sender."""
    return f"{conf.PREFIX}:sender:replicated"


def confirm_replicated(client: RedisClient, replicas: int, timeout: float) -> None:
    """Return once ``replicas`` replicas acknowledged everything written so far; raise
    :class:`NotReplicated` if fewer did within half of ``timeout`` seconds (or the error reply
    of the marker's write, such as ``NOREPLICAS``). Not on Redis Cluster (the check E093)."""
    wait_ms = max(1, round(timeout * 500))
    marked, acknowledged = on_one_connection(
        client,
        [("SET", marker_key(), "1", "PX", MARKER_TTL_MS), ("WAIT", replicas, wait_ms)],
    )
    for answer in (marked, acknowledged):
        if isinstance(answer, ResponseError):
            raise answer
    if acknowledged < replicas:
        raise NotReplicated(
            f"{acknowledged} of the {replicas} replicas SENDER['REPLICAS'] asks for "
            f"acknowledged the batch within {wait_ms} ms"
        )
