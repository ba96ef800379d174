"""Lua scripts shipped beside the Python that calls them, called with EVALSHA in one round trip.

Each subpackage keeps its scripts in its own ``lua/`` folder and reads them through a
:class:`ScriptLibrary`; helpers shared by several scripts are pasted in by a
``--#include lib/<file>.lua`` line (Lua in Redis has no ``require``), found in the package's own
``lua/lib/`` first (helpers of one kind of metric), else in ``core/lua/lib/`` (shared by kinds).

Errors our scripts raise on purpose begin with a stable code (:data:`REFUSED`, :data:`STALE`)
that Python matches with :func:`error_code`; the words after it are for people only. A refusal
reaches the caller of a model as :class:`MetricsRefused`, a ``ValueError``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

from .connection import RedisClient

KeyOrArg = str | bytes | int | float
#: This package, whose ``lua/lib/`` holds the shared helpers.
CORE = __name__.rpartition(".")[0]
INCLUDE = "--#include "

#: A write script refused this one write before writing anything (bad input that only Redis
#: could see: an overflowing slice, a full id mapping, an event the script cannot store).
REFUSED = "DRM_REFUSED"
#: A bitmap query found a prebuilt union stale: the caller builds it again.
STALE = "DRM_STALE"

#: How Redis before 7.0 wraps an error raised inside a script (7.0 passes the error through):
#: the original error, with its own code, follows.
LEGACY_SCRIPT_ERROR = re.compile(
    r"^Error running script \(call to f_[0-9a-f]+\): @user_script:\d+: "
)


def error_message(error: BaseException) -> str:
    """An error reply's text as Redis 7 words it, whichever server version sent it."""
    return LEGACY_SCRIPT_ERROR.sub("", str(error), count=1)


def is_script_error(error: BaseException) -> bool:
    """Whether the error was raised while a script ran (a Lua runtime error or a command the
    script called), rather than by the server refusing to run it at all."""
    text = str(error)
    return text.startswith("user_script:") or LEGACY_SCRIPT_ERROR.match(text) is not None


class MetricsRefused(ValueError):
    """A write script refused this write before writing anything (``DRM_REFUSED``): bad input
    only Redis could see, such as an overflowing slice or a time ahead of the Redis clock. The
    Redis error reply is its ``__cause__``."""


def error_code(error: BaseException) -> str:
    """The code an error reply begins with (``WRONGTYPE``, ``DRM_REFUSED``...), or ``""``.

    redis-py strips the generic ``ERR`` code, so a plain error has no code here.
    """
    if isinstance(error, MetricsRefused):
        return REFUSED
    head = error_message(error).split(" ", 1)[0]
    return head if head.isupper() else ""


def as_refusal(error: Exception) -> Exception:
    """``error`` as a :class:`MetricsRefused` when it is a ``DRM_REFUSED`` reply, else as is."""
    if isinstance(error, ResponseError) and error_code(error) == REFUSED:
        refusal = MetricsRefused(error_message(error).removeprefix(REFUSED).strip())
        refusal.__cause__ = error
        return refusal
    return error


class LuaScript:
    """A script run with EVALSHA, falling back to EVAL once if the server has not seen it."""

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()

    def __call__(
        self, client: RedisClient, keys: Sequence[KeyOrArg], args: Sequence[KeyOrArg] = ()
    ) -> Any:
        try:
            try:
                return client.evalsha(self.sha, len(keys), *keys, *args)
            except NoScriptError:
                return client.eval(self.source, len(keys), *keys, *args)
        except ResponseError as exc:
            refusal = as_refusal(exc)
            if refusal is exc:
                raise
            raise refusal from exc

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


class ScriptLibrary:
    """The scripts in one package's ``lua/`` folder, each read and hashed once per process."""

    def __init__(self, package: str) -> None:
        self.package = package

    def __call__(self, name: str) -> LuaScript:
        return _load(self.package, name)


@cache
def _load(package: str, name: str) -> LuaScript:
    return LuaScript(name, _read(package, f"{name}.lua"))


def _read(package: str, path: str) -> str:
    """A script's text, each ``--#include lib/x.lua`` line replaced by that file: the package's
    own ``lua/lib/x.lua`` if it has one, else the core's."""
    lines = []
    for line in files(package).joinpath("lua", path).read_text("utf-8").splitlines():
        if line.startswith(INCLUDE):
            included = line.removeprefix(INCLUDE).strip()
            own = files(package).joinpath("lua", included).is_file()
            lines.append(_read(package if own else CORE, included))
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


#: The scripts every kind of metric shares (catalogue, retirement).
script = ScriptLibrary(CORE)
