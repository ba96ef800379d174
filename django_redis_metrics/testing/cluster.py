"""A local Redis Cluster of throwaway servers (:mod:`.server`), with replicas to fail over to."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from .server import RedisServer, _command, _fields

CLUSTER_SLOTS = 16384


class RedisClusterServers:
    """A local Redis Cluster of ``masters`` primaries, slots split evenly, each with
    ``replicas`` replicas (``CLUSTER REPLICATE``), so that killing a master fails over to its
    replica after about ``node_timeout_ms`` plus a second."""

    def __init__(
        self,
        masters: int = 3,
        replicas: int = 0,
        node_timeout_ms: int = 5000,
        options: Sequence[str] = (),
    ) -> None:
        self.masters = [
            RedisServer(cluster=True, node_timeout_ms=node_timeout_ms, options=options)
            for _ in range(masters)
        ]
        self.replicas = [
            RedisServer(cluster=True, node_timeout_ms=node_timeout_ms, options=options)
            for _ in range(masters * replicas)
        ]
        self.nodes = [*self.masters, *self.replicas]
        self.node_timeout_ms = node_timeout_ms

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self) -> RedisClusterServers:
        try:
            for node in self.nodes:
                node.start()
        except Exception:
            self.stop()  # the nodes already started are never left running
            raise
        clients = [node.client() for node in self.masters]
        share = CLUSTER_SLOTS // len(clients)
        for index, client in enumerate(clients):
            first = index * share
            last = CLUSTER_SLOTS - 1 if index == len(clients) - 1 else first + share - 1
            _command(client, "CLUSTER ADDSLOTS", *range(first, last + 1))
        for node in self.nodes[1:]:
            _command(clients[0], "CLUSTER MEET", "127.0.0.1", node.port)
        self._wait(lambda: all(self._known(node) for node in self.nodes), "meet")
        ids = [_command(client, "CLUSTER MYID") for client in clients]
        for index, replica in enumerate(self.replicas):
            master_id = ids[index % len(ids)]
            _command(replica.client(), "CLUSTER REPLICATE", master_id)
        self._wait(lambda: all(self._ready(node) for node in self.nodes), "cluster_state:ok")
        return self

    def _wait(self, ready: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + 30
        while not ready():
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"The local Redis Cluster did not reach {what}.")
            time.sleep(0.05)

    def _known(self, node: RedisServer) -> bool:
        info = _fields(_command(node.client(), "CLUSTER INFO"))
        return info.get("cluster_known_nodes") == str(len(self.nodes))

    def _ready(self, node: RedisServer) -> bool:
        if not self._known(node):
            return False
        client = node.client()
        if _fields(_command(client, "CLUSTER INFO")).get("cluster_state") != "ok":
            return False
        if node in self.replicas:
            replication = _fields(client.info("replication"))
            return replication.get("master_link_status") == "up"
        return True

    def master_of(self, key: str) -> RedisServer:
        """The node serving ``key``'s slot now (a promoted replica after a failover)."""
        live = next(node for node in self.nodes if node.process is not None)
        slot = int(_command(live.client(), "CLUSTER KEYSLOT", key))
        for start, end, master, *_replicas in _command(live.client(), "CLUSTER SLOTS"):
            if int(start) <= slot <= int(end):
                return next(server for server in self.nodes if server.port == int(master[1]))
        raise RuntimeError(f"No node serves the slot of {key!r}.")

    def failed_over(self, dead: RedisServer) -> bool:
        """Whether every live node sees the cluster healthy, with no slot served by ``dead``
        (each asked once, without retries: an error means "ask again")."""
        for node in self.nodes:
            if node is dead or node.process is None:
                continue
            client = node.probe()
            if _fields(_command(client, "CLUSTER INFO")).get("cluster_state") != "ok":
                return False
            slots = _command(client, "CLUSTER SLOTS")
            if any(int(master[1]) == dead.port for _start, _end, master, *_rest in slots):
                return False
        return True

    def stop(self) -> None:
        for node in self.nodes:
            node.cleanup()
