"""Redis Sentinel: clients on the master of a Sentinel-managed service, sync and async.

Two ways in. ``CONNECTION = "redis+sentinel://[user:password@]host1:26379,host2:26379/service/db"``
names the sentinels (port 26379 by default), the service they monitor and the database; the
user and password are those of the Redis servers, and ``?sentinel_username=``/
``?sentinel_password=`` those of the sentinels if they require one. Or ``CONNECTION`` names a
django-redis ``CACHES`` alias using its ``SentinelClient``: its pool is shared as is, and the
fail-open and async clients are made from its sentinels and connection options.

Every client asks the sentinels for the master's address when it opens a connection (redis-py's
``SentinelConnectionPool``), so after a failover new connections reach the promoted replica. A
connection still open to a master that was demoted answers ``READONLY`` (redis-py then drops it)
or, under ``min-replicas-to-write``, ``NOREPLICAS`` as soon as its replica left it: then
:class:`FollowingConnection` asks the sentinels, and if they name another master it drops the
connection and raises ``ConnectionError`` (an outage: the sender keeps the writes and sends them
to the new master at its next attempt) rather than waiting, maybe ten seconds, for the sentinels
to reconfigure the old master.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis
import redis.asyncio
import redis.asyncio.sentinel as asentinel
import redis.sentinel as sentinel
from django.core.exceptions import ImproperlyConfigured
from redis.exceptions import ConnectionError, ResponseError, TimeoutError

SCHEME = "redis+sentinel://"
DEFAULT_SENTINEL_PORT = 26379
#: The reply of a master that lost the replicas ``min-replicas-to-write`` asks for: it may have
#: been replaced (its replica promoted), so the sentinels are asked who the master is now.
NO_REPLICAS = "NOREPLICAS"
#: The options of a sentinel's own client taken from the servers' (timeouts, retries).
SENTINEL_OPTIONS = ("socket_timeout", "socket_connect_timeout", "retry")


def is_sentinel_url(target: str) -> bool:
    return target.startswith(SCHEME)


@dataclass(frozen=True)
class SentinelTarget:
    """What a ``redis+sentinel://`` URL names."""

    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int
    username: str | None
    password: str | None
    sentinel_username: str | None
    sentinel_password: str | None


def parse(target: str) -> SentinelTarget:
    """Read a ``redis+sentinel://`` URL; ``ImproperlyConfigured`` saying what is wrong."""
    parts = urlsplit(target)
    credentials, _, hosts = parts.netloc.rpartition("@")
    username, _, password = credentials.partition(":")
    sentinels = []
    for host in filter(None, hosts.split(",")):
        name, _, port = host.rpartition(":") if ":" in host else (host, "", "")
        if not port.isdecimal() and port:
            raise ImproperlyConfigured(f"{_redacted(target)}: bad sentinel port {port!r}.")
        sentinels.append((name, int(port) if port else DEFAULT_SENTINEL_PORT))
    path = [unquote(part) for part in parts.path.strip("/").split("/") if part]
    if not sentinels or not path or len(path) > 2 or (len(path) == 2 and not path[1].isdecimal()):
        raise ImproperlyConfigured(
            f"{_redacted(target)} is not a Sentinel URL of the form "
            "redis+sentinel://[user:password@]host1:26379,host2:26379/service_name/db."
        )
    query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
    unknown = set(query) - {"sentinel_username", "sentinel_password"}
    if unknown:
        raise ImproperlyConfigured(
            f"{_redacted(target)}: unknown option(s) {', '.join(sorted(unknown))}; a Sentinel "
            "URL takes sentinel_username and sentinel_password."
        )
    return SentinelTarget(
        sentinels=tuple(sentinels),
        service=path[0],
        db=int(path[1]) if len(path) == 2 else 0,
        username=unquote(username) or None,
        password=unquote(password) or None,
        sentinel_username=query.get("sentinel_username"),
        sentinel_password=query.get("sentinel_password"),
    )


def _redacted(target: str) -> str:
    """``target`` fit for an error message: no credentials, no options (a password may be one)."""
    scheme, _, rest = target.partition("?")[0].partition("://")
    return f"{scheme}://***@{rest.rpartition('@')[2]}" if "@" in rest else f"{scheme}://{rest}"


def _sentinel_kwargs(target: SentinelTarget, options: dict[str, Any]) -> dict[str, Any]:
    kwargs = {key: options[key] for key in SENTINEL_OPTIONS if key in options}
    if target.sentinel_username:
        kwargs["username"] = target.sentinel_username
    if target.sentinel_password:
        kwargs["password"] = target.sentinel_password
    return kwargs


def _server_kwargs(target: SentinelTarget, options: dict[str, Any]) -> dict[str, Any]:
    return {**options, "db": target.db, "username": target.username, "password": target.password}


class FollowingConnection(sentinel.SentinelManagedConnection):
    """A connection to the master that notices, at a ``NOREPLICAS`` reply, that the sentinels
    promoted another server (see the module's docstring)."""

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read_response(*args, **kwargs)
        except ResponseError as error:
            if not str(error).startswith(NO_REPLICAS) or not self._replaced():
                raise
            self.disconnect()  # type: ignore[no-untyped-call]
            raise ConnectionError(f"The master was replaced ({error})") from error

    def _replaced(self) -> bool:
        pool: Any = self.connection_pool
        if not pool.is_master:
            return False
        try:
            address = pool.get_master_address()  # drops idle connections to the old one
        except (ConnectionError, TimeoutError):
            return False
        return tuple(address) != (self.host, self.port)


class AsyncFollowingConnection(asentinel.SentinelManagedConnection):
    """:class:`FollowingConnection` for ``redis.asyncio``."""

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return await super().read_response(*args, **kwargs)
        except ResponseError as error:
            if not str(error).startswith(NO_REPLICAS) or not await self._replaced():
                raise
            await self.disconnect()
            raise ConnectionError(f"The master was replaced ({error})") from error

    async def _replaced(self) -> bool:
        pool: Any = self.connection_pool
        if not pool.is_master:
            return False
        try:
            address = await pool.get_master_address()
        except (ConnectionError, TimeoutError):
            return False
        return tuple(address) != (self.host, self.port)


class SSLFollowingConnection(FollowingConnection, sentinel.SentinelManagedSSLConnection):
    """:class:`FollowingConnection` over TLS."""


class AsyncSSLFollowingConnection(AsyncFollowingConnection, asentinel.SentinelManagedSSLConnection):
    """:class:`AsyncFollowingConnection` over TLS."""


def client(target: str, options: dict[str, Any]) -> redis.Redis:
    """A client on the master of the service ``target`` (a ``redis+sentinel://`` URL) names."""
    parsed = parse(target)
    manager = sentinel.Sentinel(  # type: ignore[no-untyped-call]
        list(parsed.sentinels), sentinel_kwargs=_sentinel_kwargs(parsed, options)
    )
    master: redis.Redis = manager.master_for(  # type: ignore[no-untyped-call]
        parsed.service, connection_class=FollowingConnection, **_server_kwargs(parsed, options)
    )
    return master


def async_client(target: str, options: dict[str, Any]) -> redis.asyncio.Redis:
    """:func:`client` for ``redis.asyncio`` (a pool of the running loop's own)."""
    parsed = parse(target)
    manager = asentinel.Sentinel(  # type: ignore[no-untyped-call]
        list(parsed.sentinels), sentinel_kwargs=_sentinel_kwargs(parsed, options)
    )
    master: redis.asyncio.Redis = manager.master_for(
        parsed.service,
        connection_class=AsyncFollowingConnection,
        **_server_kwargs(parsed, options),
    )
    return master


async def aclose_sentinels(client: Any) -> None:
    """Close the connections to the sentinels of an async client made by :func:`async_client`
    or :func:`async_alias_client` (closing the client closes only its master's pool); nothing
    for another client."""
    manager = getattr(getattr(client, "connection_pool", None), "sentinel_manager", None)
    for node in getattr(manager, "sentinels", ()):
        await node.aclose()


def is_sentinel_pool(pool: Any) -> bool:
    """Whether ``pool`` (a ``CACHES`` alias's) is redis-py's Sentinel pool."""
    return isinstance(pool, sentinel.SentinelConnectionPool)


def identity(pool: Any) -> str | None:
    """Which data a Sentinel pool (sync or async) reaches, whatever server is master now: the
    service and its sentinels; ``None`` for another pool (whose host and port say it)."""
    service = getattr(pool, "service_name", None)
    manager = getattr(pool, "sentinel_manager", None)
    if service is None or manager is None:
        return None
    nodes = sorted(
        f"{node.connection_pool.connection_kwargs.get('host')}:"
        f"{node.connection_pool.connection_kwargs.get('port')}"
        for node in manager.sentinels
    )
    return f"sentinel:{service}@{','.join(nodes)}"


def _alias_sentinels(pool: Any) -> tuple[list[tuple[str, int]], dict[str, Any]]:
    """The sentinels of an alias's pool, and the options of its clients to them."""
    manager: sentinel.Sentinel = pool.sentinel_manager
    addresses = [
        (
            str(node.connection_pool.connection_kwargs["host"]),
            int(node.connection_pool.connection_kwargs["port"]),
        )
        for node in manager.sentinels
    ]
    return addresses, dict(manager.sentinel_kwargs or {})


def _alias_server_kwargs(pool: Any, allowed: frozenset[str] | None) -> dict[str, Any]:
    kwargs = {
        key: value
        for key, value in pool.connection_kwargs.items()
        if key != "connection_pool" and (allowed is None or key in allowed)
    }
    kwargs.pop("host", None)
    kwargs.pop("port", None)
    return kwargs


def alias_client(pool: Any, options: dict[str, Any]) -> redis.Redis:
    """A client of its own on the master of an alias's Sentinel ``pool``: the alias's sentinels
    and connection options, these timeouts (for sentinels and servers alike)."""
    addresses, sentinel_kwargs = _alias_sentinels(pool)
    sentinel_kwargs.update({key: options[key] for key in SENTINEL_OPTIONS if key in options})
    manager = sentinel.Sentinel(addresses, sentinel_kwargs=sentinel_kwargs)  # type: ignore[no-untyped-call]
    kwargs = {**_alias_server_kwargs(pool, None), **options}
    ssl = issubclass(pool.connection_class, sentinel.SentinelManagedSSLConnection)
    master: redis.Redis = manager.master_for(  # type: ignore[no-untyped-call]
        pool.service_name,
        connection_class=SSLFollowingConnection if ssl else FollowingConnection,
        **kwargs,
    )
    return master


def async_alias_client(
    pool: Any, options: dict[str, Any], allowed: frozenset[str]
) -> redis.asyncio.Redis:
    """:func:`alias_client` for ``redis.asyncio``: the alias's ``allowed`` connection options."""
    addresses, sentinel_kwargs = _alias_sentinels(pool)
    sentinel_kwargs = {key: value for key, value in sentinel_kwargs.items() if key in allowed}
    sentinel_kwargs.update({key: options[key] for key in SENTINEL_OPTIONS if key in options})
    manager = asentinel.Sentinel(addresses, sentinel_kwargs=sentinel_kwargs)  # type: ignore[no-untyped-call]
    ssl = issubclass(pool.connection_class, sentinel.SentinelManagedSSLConnection)
    master: redis.asyncio.Redis = manager.master_for(
        pool.service_name,
        connection_class=AsyncSSLFollowingConnection if ssl else AsyncFollowingConnection,
        **{**_alias_server_kwargs(pool, allowed), **options},
    )
    return master
