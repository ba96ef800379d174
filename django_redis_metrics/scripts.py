"""Lua scripts shipped as ``lua/*.lua`` files, called with EVALSHA in one round trip."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from typing import Any

from redis.exceptions import NoScriptError

from .connection import RedisClient

KeyOrArg = str | bytes | int | float
INCLUDE = "--#include "


class LuaScript:
    """A script run with EVALSHA, falling back to EVAL once if the server has not seen it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.source = _read(f"{name}.lua")
        self.sha = hashlib.sha1(self.source.encode()).hexdigest()

    def __call__(
        self, client: RedisClient, keys: Sequence[KeyOrArg], args: Sequence[KeyOrArg] = ()
    ) -> Any:
        try:
            return client.evalsha(self.sha, len(keys), *keys, *args)
        except NoScriptError:
            return client.eval(self.source, len(keys), *keys, *args)

    def queue(self, pipe: Any, keys: Sequence[KeyOrArg], args: Sequence[KeyOrArg] = ()) -> None:
        """Queue an EVALSHA on a pipeline (cluster pipelines block the ``evalsha`` method)."""
        options: dict[str, Any] = {}
        if keys and hasattr(pipe, "get_node_from_key"):
            # Route by the first key: redis-py's cluster pipeline would otherwise ask the
            # server (COMMAND GETKEYS) for every queued EVALSHA, one round trip each.
            options["target_nodes"] = pipe.get_node_from_key(keys[0])
        pipe.execute_command("EVALSHA", self.sha, len(keys), *keys, *args, **options)

    def ensure_loaded(self, client: RedisClient) -> None:
        """SCRIPT LOAD is idempotent; on a cluster it reaches every primary."""
        client.script_load(self.source)


def _read(path: str) -> str:
    """A script's text, with each ``--#include lib/x.lua`` line replaced by that file (Lua in
    Redis has no ``require``; shared helpers are pasted in before the script is hashed)."""
    lines = []
    for line in files(__package__).joinpath("lua", path).read_text("utf-8").splitlines():
        if line.startswith(INCLUDE):
            lines.append(_read(line.removeprefix(INCLUDE).strip()))
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


@cache
def script(name: str) -> LuaScript:
    return LuaScript(name)
