"""What ``MetricsMiddleware`` adds to a request, in Redis round trips.

Starts its own private redis-server, then serves the same tiny view through two WSGI handlers,
one with the middleware and one without, in alternating rounds, and compares the median time
per request. The difference is divided by the median time of one ``PING`` round trip measured
in the same run, with the same client library, against the same server.

    .venv/bin/python benchmarks/bench_middleware.py [--requests 2000] [--rounds 15]

Goal: at most 1.5 round trips.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import path


def page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


urlpatterns = [path("page/", page, name="page")]


def environ() -> dict[str, Any]:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/page/",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }


def start_response(status: str, headers: list[tuple[str, str]]) -> None:
    assert status.startswith("200"), status


def time_requests(handler: Any, count: int, isolated: bool = False) -> float:
    """Seconds per request, including sending everything the requests queued.

    ``isolated``: wait for each request's round trip before the next request (no merging).
    """
    from django_redis_metrics.recorder import flush

    started = time.perf_counter()
    for _ in range(count):
        for _chunk in handler(environ(), start_response):
            pass
        if isolated:
            flush()
    flush()
    return (time.perf_counter() - started) / count


def time_pings(client: Any, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        client.ping()
    return (time.perf_counter() - started) / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000, help="requests per round")
    parser.add_argument("--rounds", type=int, default=15)
    options = parser.parse_args()

    from django_redis_metrics.testing import RedisServer

    server = RedisServer().start()
    try:
        settings.configure(
            DEBUG=False,
            SECRET_KEY="bench",
            ALLOWED_HOSTS=["testserver"],
            ROOT_URLCONF=__name__,
            INSTALLED_APPS=["django_redis_metrics"],
            MIDDLEWARE=[],
            USE_TZ=True,
            DJANGO_REDIS_METRICS={"CONNECTION": server.url, "PREFIX": "bench"},
        )
        django.setup()
        from django.core.handlers.wsgi import WSGIHandler

        from django_redis_metrics.failopen import fail_open_client

        plain = WSGIHandler()
        settings.MIDDLEWARE = ["django_redis_metrics.middleware.MetricsMiddleware"]
        measured = WSGIHandler()
        client = fail_open_client()  # the very client the middleware writes with

        for handler in (plain, measured):  # warm up: connections, scripts, caches
            time_requests(handler, 200)
        time_pings(client, 200)

        base, added, alone, pings = [], [], [], []
        for _ in range(options.rounds):
            base.append(time_requests(plain, options.requests))
            added.append(time_requests(measured, options.requests))
            alone.append(time_requests(measured, options.requests // 4, isolated=True))
            pings.append(time_pings(client, options.requests))
        ping = statistics.median(pings)
        extra = statistics.median(a - b for a, b in zip(added, base, strict=True))
        extra_alone = statistics.median(a - b for a, b in zip(alone, base, strict=True))
        stored = int(client.hget("bench:counter:{hits}:86400", str(int(time.time()) // 86400
                                                                     * 86400)) or 0)
        print(f"request without middleware: {statistics.median(base) * 1e6:8.1f} µs")
        print(f"request with middleware:    {statistics.median(added) * 1e6:8.1f} µs")
        print(f"added by the middleware:    {extra * 1e6:8.1f} µs")
        print(f"one PING round trip:        {ping * 1e6:8.1f} µs")
        print(f"ratio:                      {extra / ping:8.2f} round trips (goal: <= 1.5)")
        print("isolated requests (each waits for its own round trip before the next one):")
        print(f"  added per request:        {extra_alone * 1e6:8.1f} µs = "
              f"{extra_alone / ping:.2f} round trips (the request itself still waits on none)")
        print(f"(hits counted: {stored})")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
