"""Lua scripts shipped beside the Python that calls them, called with EVALSHA in one round trip.

Each subpackage keeps its scripts in its own ``lua/`` folder and reads them through a
:class:`ScriptLibrary`; helpers shared by several scripts are pasted in by a
``--#include lib/<file>.lua`` line (Lua in Redis has no ``require``), found in the package's own
``lua/lib/`` first (helpers of one kind of metric), else in ``core/lua/lib/`` (shared by kinds).

Errors our scripts raise on purpose begin with a stable code (:data:`REFUSED`, :data:`STALE`)
that Python matches with :func:`error_code`; the words after it are for people only. A refusal
reaches the caller of a model as :class:`MetricsRefused`, a ``ValueError``.

Any script has an *idempotent variant* (:meth:`LuaScript.idempotent`): the same script wrapped so
that a call carrying a sender id and a sequence number is applied at most once, however often it
is re-sent (the sender re-sends a batch whose reply was lost).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from functools import cache
from importlib.resources import files
from typing import Any

from redis.exceptions import NoScriptError, ResponseError

from ..exceptions import MetricsRefused as MetricsRefused  # also importable from here
from .connection import RedisClient, missing_permission

KeyOrArg = str | bytes | int | float
#: This package, whose ``lua/lib/`` holds the shared helpers.
CORE = __name__.rpartition(".")[0]
INCLUDE = "--#include "

#: A write script refused this one write before writing anything (bad input that only Redis
#: could see: an overflowing slice, a full id mapping, an event the script cannot store).
REFUSED = "DRM_REFUSED"
#: A bitmap query found a prebuilt union stale: the caller builds it again.
STALE = "DRM_STALE"
#: The status reply of an idempotent variant whose call was already applied (nothing written).
DUPLICATE = "DRM_DUPLICATE"
#: An idempotent call refused because an earlier call of its batch on the same metric is not
#: applied yet (it met a passing error): the whole batch is sent again, in order.
OUT_OF_ORDER = "DRM_ORDER"

#: The idempotent wrapper. The call's last key is a hash of the last number applied per sender,
#: in the metric's slot; its last three arguments are the sender id, the call's number and the
#: number of the previous call of its batch on the same metric (0 if none). Numbers grow with
#: every call a sender sends, one batch at a time, so "at most the stored number" means
#: "already applied" as long as the calls on one metric are applied in order, which the
#: previous number enforces (a redirection or a failover may fail an earlier call of a batch
#: and not a later one). The script runs in a protected call; unless it failed with an error
#: that passes (out of memory, a read-only replica...: nothing was written, the batch will be
#: sent again), its number is recorded, refusals for good included. Errors come back worded as
#: Redis 7 words them (6.2 prefixes a call's error with the script's line and a "-"), so that
#: their code classifies them; recording the number is protected too (an error there means
#: nothing was written).
IDEMPOTENT = """\
local drm_once = table.remove(KEYS)
local drm_prev = tonumber(table.remove(ARGV))
local drm_seq = tonumber(table.remove(ARGV))
local drm_sender = table.remove(ARGV)
local function drm_message(e)
    local text = type(e) == 'table' and e.err or tostring(e)
    text = string.gsub(text, '^@user_script: %d+: ', '')
    text = string.gsub(text, '^%-', '')
    return (string.gsub(text, '%s+$', ''))
end
local drm_done = tonumber(redis.call('HGET', drm_once, drm_sender) or 0)
if drm_done >= drm_seq then
    return redis.status_reply('{duplicate}')
end
if drm_done < drm_prev then
    return redis.error_reply('{out_of_order} an earlier write of this batch is not applied yet')
end
local drm_ok, drm_result = pcall(function()
{source}
end)
if not drm_ok or (type(drm_result) == 'table' and drm_result.err) then
    local drm_error = drm_message(drm_result)
    drm_result = redis.error_reply(drm_error)
    local code = string.match(drm_error, '^([%u_]+) ')
    if code and code ~= 'ERR' and code ~= 'WRONGTYPE' and code ~= '{refused}' then
        return drm_result
    end
end
local drm_saved, drm_why = pcall(function()
    if drm_done == 0 and redis.call('HLEN', drm_once) >= {max_senders} then
        redis.call('HDEL', drm_once, redis.call('HRANDFIELD', drm_once))
    end
    redis.call('HSET', drm_once, drm_sender, drm_seq)
    redis.call('PEXPIRE', drm_once, {ttl_ms})
end)
if not drm_saved then
    return redis.error_reply(drm_message(drm_why))
end
return drm_result
"""

#: How Redis before 7.0 wraps an error raised inside a script (7.0 passes the error through):
#: the original error, with its own code, follows.
LEGACY_SCRIPT_ERROR = re.compile(
    r"^Error running script \(call to f_[0-9a-f]+\): @user_script:\d+: "
)
#: How Redis before 7.0 words the error of a command a script called (``redis.pcall`` returns
#: it so, and a script may pass it on): ``@user_script: 12: -OOM command not allowed...``.
LEGACY_CALL_ERROR = re.compile(r"^@user_script: \d+: -")


def error_message(error: BaseException) -> str:
    """An error reply's text as Redis 7 words it, whichever server version sent it."""
    text = LEGACY_SCRIPT_ERROR.sub("", str(error), count=1)
    return LEGACY_CALL_ERROR.sub("", text, count=1).rstrip()


def is_script_error(error: BaseException) -> bool:
    """Whether the error was raised while a script ran (a Lua runtime error or a command the
    script called), rather than by the server refusing to run it at all."""
    text = str(error)
    return text.startswith("user_script:") or LEGACY_SCRIPT_ERROR.match(text) is not None


def error_code(error: BaseException) -> str:
    """The code an error reply begins with (``WRONGTYPE``, ``DRM_REFUSED``...), or ``""``.

    redis-py strips the generic ``ERR`` code, so a plain error has no code here.
    """
    if isinstance(error, MetricsRefused):
        return REFUSED
    head = error_message(error).split(" ", 1)[0]
    return head if head.isupper() else ""


def as_refusal(error: Exception) -> Exception:
    """``error`` as a :class:`MetricsRefused` when it is a ``DRM_REFUSED`` reply, as a
    :class:`~.connection.MissingPermission` when the ACL denied a command, else as is."""
    if isinstance(error, ResponseError) and error_code(error) == REFUSED:
        refusal = MetricsRefused(error_message(error).removeprefix(REFUSED).strip())
        refusal.__cause__ = error
        return refusal
    return missing_permission(error)


class LuaScript:
    """A script run with EVALSHA, falling back to EVAL once if the server has not seen it."""

    #: Seconds a metric's hash of applied sequence numbers outlives its last idempotent write:
    #: a batch re-sent later than that (Redis unreachable for a day) could be counted twice.
    ONCE_TTL: int = 86400
    #: Most senders (processes) remembered per metric: past it a random one is forgotten, so
    #: the fields of processes long gone stay bounded (about 40 bytes each).
    ONCE_MAX_SENDERS: int = 128

    def __init__(self, name: str, source: str) -> None:
        self.name = name
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()
        self._idempotent: LuaScript | None = None

    def idempotent(self) -> LuaScript:
        """This script, applied at most once per (sender, number): called with one more key
        (:func:`once_key`) and three more arguments (sender id, number, previous number), it
        answers the status :data:`DUPLICATE` without writing when that number was already
        applied (see :data:`IDEMPOTENT`)."""
        if self._idempotent is None:
            source = IDEMPOTENT.format(
                duplicate=DUPLICATE,
                out_of_order=OUT_OF_ORDER,
                refused=REFUSED,
                source=self.source.rstrip("\n"),
                max_senders=self.ONCE_MAX_SENDERS,
                ttl_ms=self.ONCE_TTL * 1000,
            )
            self._idempotent = LuaScript(f"{self.name}:once", source)
        return self._idempotent

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


def once_key(first_key: str) -> str:
    """The hash of applied sequence numbers for a call whose first key is ``first_key``: one
    per metric (``<PREFIX>:<kind>:{<name>}:once``), in the same cluster slot."""
    head, brace, _tail = first_key.partition("}")
    return f"{head}}}:once" if brace and "{" in head else f"{first_key}:once"


def is_duplicate(reply: Any) -> bool:
    """Whether ``reply`` is the :data:`DUPLICATE` status of an idempotent variant."""
    if isinstance(reply, bytes):
        return reply == DUPLICATE.encode()
    return isinstance(reply, str) and reply == DUPLICATE


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
