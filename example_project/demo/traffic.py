"""The demo's traffic model, shared by ``generate_traffic`` (the past) and the simulated
visitors (the present), so both run at the same rates: a chart shows one continuous line.

Also the mark that makes ``generate_traffic`` idempotent: the moment up to which history was
written (generated, or browsed live by the visitors), kept in Redis beside the metrics.
"""

from __future__ import annotations

import math
import random
from datetime import datetime

from django_redis_metrics import get_redis_connection
from django_redis_metrics.conf import conf
from django_redis_metrics.core.periods import get_zone

from .metrics import COUNTRIES, FILES, PRODUCTS

#: Average requests per minute at the busiest time of day, per view name.
VIEW_RATES = {"home": 6.0, "product": 9.0, "download": 1.5, "signup": 0.3, "buy": 0.8}
#: Median response time in milliseconds per view, and the spread of its log-normal shape.
VIEW_LATENCY_MS = {"home": 25.0, "product": 40.0, "download": 120.0, "signup": 60.0, "buy": 180.0}
LATENCY_SPREAD = 0.6
#: Share of each view's requests answered 4xx and 5xx (the rest 2xx) in the generated history.
VIEW_ERRORS = {"home": (0.005, 0.001), "product": (0.03, 0.002), "buy": (0.02, 0.01)}
#: Share of requests made by signed-in visitors (the others are anonymous).
SIGNED_IN = 0.6
#: The busiest hour of the day, in the site's time zone.
PEAK_HOUR = 15
HOUR = 3600
DAY = 86400


def daily_shape(timestamp: float) -> float:
    """Traffic relative to the daily peak: low at night, high in the site's afternoon."""
    local = datetime.fromtimestamp(timestamp, get_zone())
    hour = local.hour + local.minute / 60
    return 0.15 + 0.85 * (1 + math.cos((hour - PEAK_HOUR) / 24 * 2 * math.pi)) / 2


def requests_per_minute(timestamp: float) -> float:
    """The expected rate of all requests at ``timestamp``."""
    return sum(VIEW_RATES.values()) * daily_shape(timestamp)


def arrivals(rng: random.Random, start: float, end: float, per_minute: float) -> list[float]:
    """Moments of a Poisson process whose rate follows ``daily_shape`` (by thinning)."""
    moments = []
    moment = start
    rate = per_minute / 60
    while True:
        moment += rng.expovariate(rate)
        if moment >= end:
            return moments
        if rng.random() < daily_shape(moment):
            moments.append(moment)


def next_visit(rng: random.Random, now: float) -> tuple[float, str]:
    """The simulated visitors' next request: (seconds to wait, view name), at the history's
    rate for this time of day and in the history's mix of views."""
    delay = rng.expovariate(requests_per_minute(now) / 60)
    view = rng.choices(list(VIEW_RATES), weights=list(VIEW_RATES.values()))[0]
    return delay, view


def pick_latency(rng: random.Random, view: str) -> float:
    """A response time of ``view`` in milliseconds: log-normal around its median."""
    return VIEW_LATENCY_MS.get(view, 30.0) * rng.lognormvariate(0, LATENCY_SPREAD)


def pick_status_class(rng: random.Random, view: str) -> str:
    """``2xx``, ``4xx`` or ``5xx``, at the view's error shares."""
    client, server = VIEW_ERRORS.get(view, (0.0, 0.0))
    draw = rng.random()
    return "4xx" if draw < client else "5xx" if draw < client + server else "2xx"


def pick_product(rng: random.Random) -> str:
    return rng.choice(PRODUCTS)


def pick_country(rng: random.Random) -> str:
    """Where an order comes from: most from the US, France and Germany."""
    return rng.choices(COUNTRIES, weights=(5, 4, 6, 2, 1))[0]


def pick_file(rng: random.Random) -> str:
    """What is downloaded: mostly the manual."""
    return rng.choices(FILES, weights=(6, 2, 1))[0]


def marker_key() -> str:
    return f"demo-traffic:{conf.PREFIX}:written-until"


def written_until() -> float | None:
    """The moment up to which the demo's history is already written, if any."""
    value = get_redis_connection().get(marker_key())
    return None if value is None else float(value)


def mark_written(until: float) -> None:
    """History is written up to ``until`` (never moves back)."""
    previous = written_until()
    if previous is None or until > previous:
        get_redis_connection().set(marker_key(), repr(until))
