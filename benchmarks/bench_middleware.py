"""What ``MetricsMiddleware`` costs a request, in Redis ``PING`` round trips.

Starts its own private redis-server and serves a tiny view through pairs of WSGI handlers, one
without and one with the middleware, in alternating rounds. Two figures, kept apart:

- **request latency added**: how much longer the request itself takes (the handler call, from
  the WSGI environ to the response; what a client waits for). The request only queues its
  writes, so this does not include Redis; it does include the sender thread's competition for
  the GIL (and the CPU caches) with the requests. Measured two ways:

  - *after a pause* (the median request): each request starts once the previous request's
    writes were sent and ``IDLE_GAP`` after the previous request ended, a pause spent in
    ``PING`` round trips, the same for both handlers. The pause must be the same: on this
    machine a request that follows a longer wait runs slower whatever it does (a plain request
    after a 0.4 ms sleep took 220 µs longer than one after a single ``PING``), and waiting for
    the sender is such a wait. Handlers alternate in pairs and only the second request of a
    pair is timed, so a request with the middleware always follows one with it, whose writes
    the sender has just prepared and sent.
  - *back to back* (the mean request): no pause, the sender working meanwhile; it merges what
    arrives within its ``SENDER["DELAY"]`` into one round trip.
- **Redis/sender work per request**: the wall time of N requests *and* sending everything they
  queued, minus the same N requests without the middleware, per request: with each request's
  writes sent alone (one round trip each, no merging) and back to back (merged round trips).
  This is background work: it costs the process CPU and Redis time, not the request's latency.

Each is divided by the median time of one ``PING`` round trip measured in the same run, with
the same client (the fail-open client the middleware writes with), against the same server.

Two sites: a bare view (no session or auth middleware), and a signed-in user on a site with
``SessionMiddleware`` and ``AuthenticationMiddleware``, a view that reads ``request.user``, and
``ACTIVE_USERS`` on (so the user is marked on every request).

    .venv/bin/python benchmarks/bench_middleware.py [--requests 2000] [--rounds 15]

With django-prometheus installed (``pip install -r benchmarks/peers-requirements.txt``), its
middleware pair (which also measures latency and status codes per view, in process) is measured
in the same rounds, against the same plain handler, and the ratio ours / theirs printed.

Goals: the request latency added is at most 1.5 round trips (issue 5), and, with the middleware
also timing every view and counting its status class, no more than django-prometheus adds
(issue 11).
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import django
from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import path

METRICS = "django_redis_metrics.middleware.MetricsMiddleware"
#: django-prometheus' middleware pair (first and last in MIDDLEWARE, as its README says): the
#: baseline of what a per-process latency/status exporter adds to a request.
PEER_BEFORE = "django_prometheus.middleware.PrometheusBeforeMiddleware"
PEER_AFTER = "django_prometheus.middleware.PrometheusAfterMiddleware"
PEER_INSTALLED = importlib.util.find_spec("django_prometheus") is not None
SESSION_AUTH = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]


def page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("ok")


def account(request: HttpRequest) -> HttpResponse:
    assert request.user.is_authenticated
    return HttpResponse(request.user.get_username())


urlpatterns = [path("page/", page, name="page"), path("account/", account, name="account")]

Handler = Callable[[dict[str, Any], Any], Any]

#: Seconds from the end of one request to the start of the next, when measured after a pause.
IDLE_GAP = 0.001


def make_environ(path_info: str, cookie: str = "") -> Callable[[], dict[str, Any]]:
    def environ() -> dict[str, Any]:
        env: dict[str, Any] = {
            "REQUEST_METHOD": "GET",
            "PATH_INFO": path_info,
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
        if cookie:
            env["HTTP_COOKIE"] = cookie
        return env

    return environ


def start_response(status: str, headers: list[tuple[str, str]]) -> None:
    assert status.startswith("200"), status


def serve(handler: Handler, environ: Callable[[], dict[str, Any]]) -> None:
    for _chunk in handler(environ(), start_response):
        pass


def latency_after_pause(
    handlers: list[Handler],
    environ: Callable[[], dict[str, Any]],
    pairs: int,
    client: Any,
) -> list[float]:
    """The median seconds of each handler's call, every request starting after the same pause
    (the previous writes sent, then ``PING`` round trips until ``IDLE_GAP`` has passed since
    the previous request ended); each handler serves ``pairs`` pairs in turn, the second of
    each pair timed. The plain handler and every measured one take turns in the same loop, so
    they share one baseline, measured at the same moments."""
    from django_redis_metrics import flush

    times: list[list[float]] = [[] for _ in handlers]
    ended = time.perf_counter()
    for _ in range(pairs):
        for handler, timings in zip(handlers, times, strict=True):
            for timed in (False, True):
                flush()
                client.ping()
                while time.perf_counter() < ended + IDLE_GAP:
                    client.ping()
                started = time.perf_counter()
                serve(handler, environ)
                ended = time.perf_counter()
                if timed:
                    timings.append(ended - started)
    return [statistics.median(timings) for timings in times]


def latency_back_to_back(
    handler: Handler, environ: Callable[[], dict[str, Any]], count: int
) -> float:
    """The mean seconds of the handler call (what the client waits for), requests back to
    back, the sender working meanwhile (its competition for the GIL is part of the cost)."""
    from django_redis_metrics import flush

    times = []
    flush()
    for _ in range(count):
        started = time.perf_counter()
        serve(handler, environ)
        times.append(time.perf_counter() - started)
    flush()
    return statistics.fmean(times)


def throughput(
    handler: Handler, environ: Callable[[], dict[str, Any]], count: int, alone: bool
) -> float:
    """Seconds per request including sending everything queued (``alone``: each request's
    writes are sent before the next request, so no round trip is shared)."""
    from django_redis_metrics import flush

    flush()
    started = time.perf_counter()
    for _ in range(count):
        serve(handler, environ)
        if alone:
            flush()
    flush()
    return (time.perf_counter() - started) / count


def time_pings(client: Any, count: int) -> float:
    started = time.perf_counter()
    for _ in range(count):
        client.ping()
    return (time.perf_counter() - started) / count


def handlers(middleware: list[str]) -> tuple[Handler, dict[str, Handler]]:
    """A WSGI handler with ``middleware``, and the same with the metrics middleware after it
    (``ours``) and, when it is installed, with django-prometheus' pair around it."""
    from django.core.handlers.wsgi import WSGIHandler

    settings.MIDDLEWARE = middleware
    plain = WSGIHandler()
    settings.MIDDLEWARE = [*middleware, METRICS]
    measured: dict[str, Handler] = {"ours": WSGIHandler()}
    if PEER_INSTALLED:
        settings.MIDDLEWARE = [PEER_BEFORE, *middleware, PEER_AFTER]
        measured["django-prometheus"] = WSGIHandler()
    return plain, measured


def signed_in_cookie() -> str:
    """A session cookie (signed-cookie sessions: no session query) of a new user."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.signed_cookies import SessionStore
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)
    user = User.objects.create_user("bench", password="bench")
    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.save()
    return f"{settings.SESSION_COOKIE_NAME}={session.session_key}"


def measure(
    title: str,
    plain: Handler,
    measured: dict[str, Handler],
    environ: Callable[[], dict[str, Any]],
    client: Any,
    options: Any,
) -> None:
    """Each handler of ``measured`` against ``plain``, all in the same interleaved rounds."""
    for handler in (plain, *measured.values()):  # warm up: connections, scripts, caches
        throughput(handler, environ, 200, alone=False)
    time_pings(client, 200)

    n = options.requests
    rows: dict[str, list[float]] = {key: [] for key in ("base_idle", "base_busy", "base", "ping")}
    for name in measured:
        for key in ("idle", "busy", "alone", "merged"):
            rows[f"{name} {key}"] = []
    names = list(measured)
    for round_ in range(options.rounds):
        # The measured handlers in the reverse order every other round: whatever drifts within
        # a round (the CPU's clock, another process's load) falls on each alike.
        order = names if round_ % 2 == 0 else names[::-1]
        base_idle, *idle = latency_after_pause(
            [plain, *(measured[name] for name in order)], environ, n // 8, client
        )
        rows["base_idle"].append(base_idle)
        for name, value in zip(order, idle, strict=True):
            rows[f"{name} idle"].append(value)
        rows["base_busy"].append(latency_back_to_back(plain, environ, n))
        rows["base"].append(throughput(plain, environ, n, alone=False))
        for name in order:
            handler = measured[name]
            rows[f"{name} busy"].append(latency_back_to_back(handler, environ, n))
            rows[f"{name} alone"].append(throughput(handler, environ, n // 4, alone=True))
            rows[f"{name} merged"].append(throughput(handler, environ, n, alone=False))
        rows["ping"].append(time_pings(client, n))
    ping = statistics.median(rows["ping"])

    def added(key: str, base: str) -> tuple[float, float]:
        extra = statistics.median(a - b for a, b in zip(rows[key], rows[base], strict=True))
        return extra * 1e6, extra / ping

    print(f"\n{title}")
    for key, label in (("base_idle", "after a pause"), ("base_busy", "back to back")):
        print(
            f"  request without the middleware, {label + ':':14s}"
            f"{statistics.median(rows[key]) * 1e6:8.1f} µs"
        )
    print(f"  one PING round trip:                    {ping * 1e6:8.1f} µs")
    print("  request latency added (what the request waits for; goal <= 1.5 round trips):")
    figures: dict[str, dict[str, float]] = {}
    for name in measured:
        for key, base, label in (
            (f"{name} idle", "base_idle", f"after a {IDLE_GAP * 1e3:g} ms pause"),
            (f"{name} busy", "base_busy", "back to back"),
        ):
            micros, trips = added(key, base)
            figures.setdefault(name, {})[label] = micros
            what = f"{name}, {label}:"
            print(f"    {what:52s} {micros:8.1f} µs = {trips:5.2f} round trips")
    if len(measured) > 1:
        ours, *peers = measured
        for peer in peers:
            for (label, micros), (key, base) in zip(
                figures[ours].items(), (("idle", "base_idle"), ("busy", "base_busy")), strict=True
            ):
                theirs = figures[peer][label]
                ratio = micros / theirs if theirs > 0 else float("nan")
                each = [
                    (o - b) / (p - b)
                    for o, p, b in zip(
                        rows[f"{ours} {key}"], rows[f"{peer} {key}"], rows[base], strict=True
                    )
                    if p > b
                ]
                spread = (
                    f" (each round: {min(each):.2f} to {max(each):.2f}, median "
                    f"{statistics.median(each):.2f})"
                    if each
                    else ""
                )
                print(f"    {ours} / {peer}, {label}: {ratio:5.2f}{spread}")
    print("  Redis/sender work per request (background, not in the request's latency):")
    for name in measured:
        for key, label in (
            (f"{name} alone", "each request's writes alone"),
            (f"{name} merged", "back to back, round trips merged"),
        ):
            micros, trips = added(key, "base")
            what = f"{name}, {label}:"
            print(f"    {what:52s} {micros:8.1f} µs = {trips:5.2f} round trips")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
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
            INSTALLED_APPS=[
                "django.contrib.auth",
                "django.contrib.contenttypes",
                "django.contrib.sessions",
                "django_redis_metrics",
                *(["django_prometheus"] if PEER_INSTALLED else []),
            ],
            DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}},
            SESSION_ENGINE="django.contrib.sessions.backends.signed_cookies",
            PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],
            MIDDLEWARE=[],
            USE_TZ=True,
            DJANGO_REDIS_METRICS={"CONNECTION": server.url, "PREFIX": "bench"},
        )
        django.setup()
        from django_redis_metrics import Counter, Statistic, UniqueBitmap
        from django_redis_metrics.core.connection import fail_fast_connection

        client = fail_fast_connection()  # the very client the middleware writes with
        print(f"{options.rounds} rounds of {options.requests} requests; medians over rounds")

        plain, measured = handlers([])
        measure(
            "Bare view, no session or auth middleware "
            "(writes: 1 counter series, 1 statistic series)",
            plain,
            measured,
            make_environ("/page/"),
            client,
            options,
        )

        cookie = signed_in_cookie()
        plain, measured = handlers(SESSION_AUTH)
        measure(
            "Signed-in user, session + auth middleware, view reads request.user, "
            "ACTIVE_USERS on (writes: 1 counter series, 1 statistic series, 1 mark)",
            plain,
            measured,
            make_environ("/account/", cookie),
            client,
            options,
        )

        latency = Statistic("latency", labels=("view",)).labels(view="page")
        timed = latency.summary(86400)["count"]
        answered = Counter("hits", labels=("view", "status")).labels(view="page", status="2xx")
        print(
            f"\n(checks: {Counter('hits').total(86400)} hits counted, "
            f"{answered.total(86400)} answers of the bare view counted and "
            f"{timed} timed, {UniqueBitmap('active_users').count('day')} active user marked)"
        )
        if not PEER_INSTALLED:
            print("(django-prometheus is not installed: no baseline of a peer's middleware)")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
