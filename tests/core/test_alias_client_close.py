"""The async client made on a ``CACHES`` alias owns its pool: closing the loop's clients
(``aclose_connections``, as the loop ends) closes its connections too, none left to the
garbage collector (which warns: ``ResourceWarning: unclosed Connection``)."""

from __future__ import annotations

from typing import Any

from django_redis_metrics import Counter
from django_redis_metrics.core.aio import get_async_connection
from django_redis_metrics.core.connection import get_redis_connection

from ..asyncio_helpers import run

NAME = "drm-alias-close"


def test_closing_the_loops_clients_closes_the_alias_clients_connections(
    settings: Any, redis_server: Any
) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
        "metrics": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": redis_server.url},
    }
    settings.DJANGO_REDIS_METRICS = {"CONNECTION": "metrics", "PREFIX": "aio-alias-close"}
    counter = Counter("alias", precisions=[60])
    kept: list[Any] = []  # the client outlives its loop: only closing frees its connections

    async def main() -> None:
        await counter.aincr()
        kept.append(get_async_connection())
        await kept[0].client_setname(NAME)

    try:
        run(main)
        names = [client["name"] for client in get_redis_connection().client_list()]
        assert NAME not in names
    finally:
        counter.delete()
