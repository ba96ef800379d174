"""A throwaway Sentinel-managed Redis: a master, its replicas and three sentinels, all on free
ports of 127.0.0.1, for tests and benchmarks of failovers (``SENTINEL FAILOVER``, a SIGKILL of
the master).

Each sentinel is ``redis-server <its own config file> --sentinel``: Sentinel rewrites that file
as it learns the set, so each one lives in a directory of its own, removed at the end.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from .server import (
    RedisServer,
    _die_with_parent,
    _fields,
    free_port,
    redis_server_binary,
    terminate,
)

#: The service name the sentinels monitor.
SERVICE = "drm"


class SentinelNode:
    """One ``redis-server --sentinel`` process watching ``SERVICE``."""

    def __init__(self, master_port: int, down_after_ms: int, password: str | None = None) -> None:
        self.port = free_port()
        self.password = password
        self.directory = Path(tempfile.mkdtemp(prefix=f"drm-sentinel-{self.port}-"))
        self.config = self.directory / "sentinel.conf"
        self.config.write_text(
            f"port {self.port}\nbind 127.0.0.1\nprotected-mode no\ndir {self.directory}\n"
            f"logfile {self.directory / 'sentinel.log'}\n"
            f"sentinel monitor {SERVICE} 127.0.0.1 {master_port} 2\n"
            f"sentinel down-after-milliseconds {SERVICE} {down_after_ms}\n"
            f"sentinel failover-timeout {SERVICE} {max(2000, down_after_ms * 3)}\n"
            f"sentinel parallel-syncs {SERVICE} 1\n"
        )
        if password:  # clients and the other sentinels alike must give it
            with self.config.open("a") as config:
                config.write(f'requirepass "{password}"\nsentinel sentinel-pass "{password}"\n')
        self.process: subprocess.Popen[bytes] | None = None

    def client(self) -> redis.Redis:
        """A client that fails at once (1 s timeout, no retries)."""
        return redis.Redis(
            host="127.0.0.1",
            port=self.port,
            password=self.password,
            socket_timeout=1,
            socket_connect_timeout=1,
            retry=Retry(NoBackoff(), 0),
        )

    def start(self) -> SentinelNode:
        self.process = subprocess.Popen(
            [redis_server_binary(), str(self.config), "--sentinel"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=_die_with_parent,
        )
        return self

    def stop(self) -> None:
        terminate(self.process)
        self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)


class RedisSentinelServers:
    """A master, ``replicas`` replicas and ``sentinels`` sentinels (quorum 2) monitoring them
    as ``SERVICE`` (asking clients and each other for ``sentinel_password``, if given); a
    master that stops answering for ``down_after_ms`` is replaced by a replica
    within a second or two more. ``data_options`` go to every data node (e.g. the ACL or
    ``min-replicas-to-write``)."""

    def __init__(
        self,
        replicas: int = 1,
        sentinels: int = 3,
        down_after_ms: int = 1000,
        data_options: tuple[str, ...] = (),
        sentinel_password: str | None = None,
    ) -> None:
        self.data_options = data_options
        self.master = RedisServer(options=data_options)
        replica_options = (*data_options, "--replicaof", "127.0.0.1", str(self.master.port))
        self.replicas = [RedisServer(options=replica_options) for _ in range(replicas)]
        self.nodes = [self.master, *self.replicas]
        self.sentinel_password = sentinel_password
        self.sentinels = [
            SentinelNode(self.master.port, down_after_ms, sentinel_password)
            for _ in range(sentinels)
        ]

    @property
    def url(self) -> str:
        """The ``redis+sentinel://`` URL of the service: every sentinel, database 0."""
        hosts = ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in self.sentinels)
        password = self.sentinel_password
        return f"redis+sentinel://{hosts}/{SERVICE}/0" + (
            f"?sentinel_password={quote(password, safe='')}" if password else ""
        )

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """The sentinels, as redis-py's and django-redis's ``SENTINELS`` take them."""
        return [("127.0.0.1", sentinel.port) for sentinel in self.sentinels]

    def start(self) -> RedisSentinelServers:
        for node in self.nodes:
            node.start()
        for sentinel in self.sentinels:
            sentinel.start()
        self._wait(self._ready, "a monitored master with its replicas and sentinels")
        return self

    def _wait(self, ready: Callable[[], bool], what: str, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                if ready():
                    return
            except redis.RedisError:  # a node starting, or busy electing: ask again
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"The local Sentinel set did not reach {what}.")
            time.sleep(0.05)

    def _ready(self) -> bool:
        master = self.master_port()
        for sentinel in self.sentinels:
            state: Any = sentinel.client().sentinel_master(SERVICE)
            if state["is_sdown"] or int(state["port"]) != master:
                return False
            if int(state["num-slaves"]) != len(self.replicas):
                return False
            if int(state["num-other-sentinels"]) != len(self.sentinels) - 1:
                return False
        return all(
            _fields(node.client().info("replication")).get("master_link_status") == "up"
            for node in self.nodes
            if node.port != master
        )

    def wait_whole(self) -> None:
        """Block until the set is whole again: every sentinel names the same master and counts
        every replica and sentinel, and every replica is in sync with it (what a fault test
        needs before it starts: an earlier failover may still be converging)."""
        self._wait(self._ready, "a whole set")

    def master_port(self) -> int | None:
        """The port of the master every live sentinel names, or ``None`` while they disagree."""
        ports = set()
        for sentinel in self.sentinels:
            if sentinel.process is None:
                continue
            address: Any = sentinel.client().sentinel_get_master_addr_by_name(SERVICE)
            ports.add(int(address[1]))
        return ports.pop() if len(ports) == 1 else None

    def current_master(self) -> RedisServer:
        """The data node the sentinels name as master now."""
        port = self.master_port()
        return next(node for node in self.nodes if node.port == port)

    def failover(self) -> None:
        """``SENTINEL FAILOVER``: a forced failover while the master is alive (its replica is
        promoted, the old master made a replica of it)."""
        self.sentinels[0].client().execute_command("SENTINEL FAILOVER", SERVICE)  # type: ignore[no-untyped-call]

    def wait_for_master_other_than(self, old: RedisServer, seconds: float = 30) -> RedisServer:
        """Block until every sentinel names a master other than ``old`` and that node says it
        is a master; return it."""

        def promoted() -> bool:
            port = self.master_port()
            if port is None or port == old.port:
                return False
            node = next(node for node in self.nodes if node.port == port)
            return _fields(node.probe().info("replication")).get("role") == "master"

        self._wait(promoted, "a new master", seconds)
        return self.current_master()

    def revive(self, node: RedisServer) -> None:
        """Start a killed data node again as a replica of the current master, and wait until
        it is in sync and every sentinel counts it: the set is whole for the next test.

        It starts empty, and Sentinel would promote a replica that never synced (its link
        counts as never down): should the master seem down meanwhile (a loaded machine), the
        empty node would win and the master's data be thrown away. So it starts with
        ``replica-priority 0`` (never promoted), restored once it holds the master's data."""
        master = self.current_master()
        node.options = (
            *self.data_options,
            *("--replicaof", "127.0.0.1", str(master.port), "--replica-priority", "0"),
        )
        node.start()
        self._wait(self._ready, "the revived node as a replica")
        node.client().config_set("replica-priority", 100)
        self._wait(lambda: self._priority(node) == {100}, "the revived node's priority seen")

    def _priority(self, node: RedisServer) -> set[int]:
        """The priorities the sentinels know ``node`` by (they ask every 10 s at most)."""
        known = set()
        for sentinel in self.sentinels:
            replicas: Any = sentinel.client().sentinel_slaves(SERVICE)
            known |= {int(r["slave-priority"]) for r in replicas if int(r["port"]) == node.port}
        return known

    def refuse_writes_without_replica(self, refuse: bool = True) -> None:
        """``min-replicas-to-write 1`` on every data node (or 0): a master whose replica is
        promoted then refuses writes (``NOREPLICAS``) instead of taking writes that the
        promoted replica will never see."""
        for node in self.nodes:
            if node.process is not None:
                node.client().config_set("min-replicas-to-write", 1 if refuse else 0)

    def stop(self) -> None:
        for sentinel in self.sentinels:
            sentinel.stop()
        for node in self.nodes:
            node.cleanup()
