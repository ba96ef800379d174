"""Cluster failover: send a held batch again as soon as the cluster has promoted a replica.

When a master dies, the sender's attempts fail until the cluster promotes one of its replicas
(``cluster-node-timeout`` plus an election). redis-py reloads the client's slot map when a call
meets a dead node or ``MOVED``, but only while a call is being sent: between two attempts the
map still names the dead master, and the sender would learn of the promotion only at its next
attempt after the backoff, which then fails once more on that stale map.

So while a batch is held on a cluster, the sender asks the cluster every ``SENDER["RETRY_DELAY"]``
who owns the batch's slots (:meth:`SlotWatch.moved`): one node per check, with the fail-open
client's short timeout and no retries, the slots' replicas first (one of them is the one to be
promoted, and knows first), skipping nodes that did not answer. When a node names another
master than the client's map, the client reloads its map and the batch is sent at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from redis.cluster import ClusterNode, RedisCluster
from redis.crc import key_slot

from .connection import REDIS_ERRORS, RedisClient, refresh_cluster_slots
from .steps import ScriptCall


class SlotWatch:
    """Watches who owns ``slots`` on the cluster behind ``client`` (the fail-open client)."""

    def __init__(self, client: RedisCluster, slots: set[int]) -> None:
        self.client = client
        self.slots = sorted(slots)
        #: Nodes that did not answer (by name): asked again only once every other one failed.
        self.silent: set[str] = set()

    @classmethod
    def of(cls, client: RedisClient, calls: Sequence[ScriptCall]) -> SlotWatch | None:
        """A watch of the slots of ``calls``' metrics; ``None`` unless ``client`` is a cluster's."""
        if not isinstance(client, RedisCluster):
            return None
        slots = {key_slot(str(call.keys[0]).encode()) for call in calls if call.keys}
        return cls(client, slots) if slots else None

    def owners(self) -> dict[int, str]:
        """The master of each watched slot according to the client's map (node names)."""
        cache = self.client.nodes_manager.slots_cache
        return {slot: cache[slot][0].name for slot in self.slots if cache.get(slot)}

    def candidates(self) -> list[ClusterNode]:
        """Nodes to ask, best first: the watched slots' replicas, the other nodes, then their
        masters (presumed dead); nodes that did not answer are left out until all did not."""
        manager = self.client.nodes_manager
        cache = manager.slots_cache
        masters: list[ClusterNode] = []
        replicas: list[ClusterNode] = []
        for slot in self.slots:
            serving = cache.get(slot) or []
            masters.extend(serving[:1])
            replicas.extend(serving[1:])
        ordered: dict[str, ClusterNode] = {}
        for node in [*replicas, *manager.nodes_cache.values()]:
            ordered.setdefault(node.name, node)
        for master in masters:  # last, whatever their place among the cluster's nodes
            ordered.pop(master.name, None)
        for master in masters:
            ordered.setdefault(master.name, master)
        nodes = [node for name, node in ordered.items() if name not in self.silent]
        if not nodes:
            self.silent.clear()
            nodes = list(ordered.values())
        return nodes

    def ask(self, node: ClusterNode) -> dict[int, str] | None:
        """The master of each watched slot according to ``node`` (``CLUSTER SLOTS``), or
        ``None`` if it did not answer in time."""
        try:
            node_client = self.client.get_redis_connection(node)
            reply: Any = node_client.execute_command("CLUSTER SLOTS")  # type: ignore[no-untyped-call]
        except REDIS_ERRORS:
            self.silent.add(node.name)
            return None
        manager = self.client.nodes_manager
        owners = {}
        for start, end, master, *_replicas in reply:
            host = master[0].decode() if isinstance(master[0], bytes) else str(master[0])
            host, port = manager.remap_host_port(host or node.host, int(master[1]))
            for slot in self.slots:
                if int(start) <= slot <= int(end):
                    owners[slot] = f"{host}:{port}"
        return owners

    def moved(self) -> bool:
        """Ask one node who owns the watched slots; if it names another master than the
        client's map for any of them, reload the client's map. True if the map changed."""
        nodes = self.candidates()
        if not nodes:
            return False
        answer = self.ask(nodes[0])
        before = self.owners()
        if not answer or all(answer.get(slot, owner) == owner for slot, owner in before.items()):
            return False
        refresh_cluster_slots(self.client)
        return self.owners() != before
