"""``manage.py generate_traffic``: a few days of realistic metrics so every chart has data.

Writes what the middleware and the demo's views would have written, at the rates the simulated
visitors browse at (``demo/traffic.py``): page hits per view (busier by day than by night),
sign-ups, orders and downloads as events with the fields live ones carry, signed-in users in
the ``active_users`` bitmap, with new users arriving every day and fewer of them coming back as
weeks pass (so the retention table has a shape), buyers among each day's active users, every
visitor (signed in or not) in the ``visitors`` estimate, and the ``orders_pending`` gauge.

Idempotent: only the time since history was last written (generated, or browsed live while
``demo`` served) is generated, so running it again adds nothing twice.
"""

from __future__ import annotations

import math
import random
import time
from argparse import ArgumentParser
from datetime import date, datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_redis_metrics import (
    Batch,
    Counter,
    EventSeries,
    Gauge,
    Statistic,
    UniqueBitmap,
    UniqueEstimate,
    annotate,
)
from django_redis_metrics.conf import conf
from django_redis_metrics.core.periods import get_zone
from django_redis_metrics.decorators import USER_FIELD, VIEW_FIELD

from ...metrics import SHIPPING_DELAY
from ...traffic import (
    DAY,
    SIGNED_IN,
    VIEW_RATES,
    arrivals,
    mark_written,
    pick_country,
    pick_file,
    pick_latency,
    pick_product,
    pick_status_class,
    written_until,
)

#: Pages an anonymous visitor views in a visit (each visit is one more distinct visitor).
PAGES_PER_VISIT = 4
#: One user in this many ever buys (the others only browse).
CUSTOMER_EVERY = 4
#: Days of each user's visits, in the site's zone: who may buy on a day.
Visits = dict[date, list[int]]


class Command(BaseCommand):
    help = "Record a few days of sample counters, events and users so the admin charts show data."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--days", type=int, default=3, help="days of hits and events")
        parser.add_argument("--user-days", type=int, default=28, help="days of active users")
        parser.add_argument("--users", type=int, default=600, help="users in the population")
        parser.add_argument("--seed", type=int, default=42)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["days"] < 1 or options["user_days"] < 1 or options["users"] < 1:
            raise CommandError("--days, --user-days and --users must be positive.")
        rng = random.Random(options["seed"])
        now = time.time()
        self.since = written_until() or -math.inf
        if self.since >= now:
            self.stdout.write("history: already written up to now")
            return
        if self.since > -math.inf:
            written = datetime.fromtimestamp(self.since, get_zone()).isoformat(" ", "seconds")
            self.stdout.write(
                f"history: kept from an earlier run (written up to {written}); "
                f"adding the {(now - self.since) / 60:.0f} minutes since"
            )
        start = max(now - options["days"] * DAY, self.since)
        visits = self.users(rng, now, options["user_days"], options["users"])
        self.hits(rng, start, now)
        self.events(rng, start, now, visits)
        self.pending(start, now)
        self.annotations(start, now)
        mark_written(now)

    def annotations(self, start: float, end: float) -> None:
        """Deploys and a newsletter, drawn on every chart of their time (docs/annotations.md)."""
        notes = [
            (end - 2 * DAY - 5 * 3600, "Deploy v1.3", ["deploy"]),
            (end - DAY - 8 * 3600, "Newsletter sent", ["marketing"]),
            (end - 3 * 3600, "Deploy v1.4: faster product pages", ["deploy"]),
            (end - 40 * 60, "Cache flushed", ["incident"]),
        ]
        written = [annotate(text, when, tags) for when, text, tags in notes if when >= start]
        self.stdout.write(f"annotations: {len(written)}")

    def hits(self, rng: random.Random, start: float, end: float) -> None:
        site = 0
        visitors = UniqueEstimate("visitors")
        for view, rate in VIEW_RATES.items():
            moments = arrivals(rng, start, end, rate)
            site += len(moments)
            if view in ("home", "product"):  # the views that add their visitor
                self.anonymous_visits(rng, visitors, moments)
            if conf.VIEW_COUNTER:  # the per-view name before labels, when the site keeps it
                Counter(conf.VIEW_COUNTER.replace("{view}", view)).incr_many(
                    (m, 1) for m in moments
                )
            if view == "signup":  # every sign-up request is counted by @count(signups)
                Counter("signups").incr_many((m, 1) for m in moments)
            self.health(rng, view, moments)
        self.stdout.write(f"hits: {site} page views over {len(VIEW_RATES)} views")

    def anonymous_visits(
        self, rng: random.Random, visitors: UniqueEstimate, moments: list[float]
    ) -> None:
        """Anonymous visitors of pages: a new one every few anonymous page views (the
        signed-in ones are added with their visits, in ``users``)."""
        batch = Batch()
        for moment in moments:
            if rng.random() < (1 - SIGNED_IN) / PAGES_PER_VISIT:
                visitors.add(f"session-{rng.getrandbits(64):x}", when=moment, batch=batch)
            if len(batch.calls) >= 500:
                batch.execute()
        batch.execute()

    def health(self, rng: random.Random, view: str, moments: list[float]) -> None:
        """What the middleware records of each request: a hit in the view's series of
        ``HITS_COUNTER`` of its status class, and its response time in the view's series of
        ``LATENCY_STATISTIC`` (and the per-view names before labels when the site sets them),
        so the Views page and the dashboard have a history."""
        classes: dict[str, list[tuple[float, int]]] = {}
        for moment in moments:
            classes.setdefault(pick_status_class(rng, view), []).append((moment, 1))
        for cls, hits in classes.items():
            if conf.HITS_COUNTER:
                counter = Counter(conf.HITS_COUNTER, labels=("view", "status"))
                counter.labels(view=view, status=cls).incr_many(hits)
            if conf.VIEW_STATUS:
                Counter(conf.VIEW_STATUS.replace("{view}", view).replace("{class}", cls)).incr_many(
                    hits
                )
        timers = []
        if conf.LATENCY_STATISTIC:
            timers.append(Statistic(conf.LATENCY_STATISTIC, labels=("view",)).labels(view=view))
        if conf.VIEW_TIMER:
            timers.append(Statistic(conf.VIEW_TIMER.replace("{view}", view)))
        for timer in timers:
            batch = Batch()
            for moment in moments:
                timer.record(pick_latency(rng, view), when=moment, batch=batch)
                if len(batch.calls) >= 500:
                    batch.execute()
            batch.execute()

    def events(self, rng: random.Random, start: float, end: float, visits: Visits) -> None:
        """Orders and downloads with the fields ``@track_event`` gives live ones: the view's
        name, the URL's keyword arguments, the order's country, and the user when signed in
        (one of the users active that day, as a live buyer is)."""
        orders = []
        zone = get_zone()
        for moment in arrivals(rng, start, end, VIEW_RATES["buy"]):
            order: dict[str, Any] = {
                "when": moment,
                VIEW_FIELD: "buy",
                "product": pick_product(rng),
                "country": pick_country(rng),
            }
            active_that_day = visits.get(datetime.fromtimestamp(moment, zone).date(), [])
            customers = [user for user in active_that_day if user % CUSTOMER_EVERY == 0]
            if customers and rng.random() < SIGNED_IN:
                order[USER_FIELD] = rng.choice(customers)
            orders.append(order)
        EventSeries("orders", index=["product", "country"]).record_many(orders)
        downloads = [
            {"when": moment, VIEW_FIELD: "download", "file": pick_file(rng)}
            for moment in arrivals(rng, start, end, VIEW_RATES["download"])
        ]
        EventSeries("downloads", index=["file"]).record_many(downloads)
        buyers = UniqueBitmap("buyers")
        active = UniqueBitmap(conf.ACTIVE_USERS or "active_users")
        batch = Batch()
        for order in orders:
            if USER_FIELD in order:  # @mark(buyers) marks signed-in buyers only
                buyers.mark(order[USER_FIELD], when=order["when"], batch=batch)
                # ... whom the middleware marks active on that request too
                active.mark(order[USER_FIELD], when=order["when"], batch=batch)
            if len(batch.calls) >= 500:
                batch.execute()
        batch.execute()
        self.stdout.write(f"events: {len(orders)} orders, {len(downloads)} downloads")

    def pending(self, start: float, end: float) -> None:
        """``orders_pending`` at the end of every minute: the orders of the ``SHIPPING_DELAY``
        before it (those recorded by an earlier run included), as the live demo sets it."""
        window = 60
        per_minute = EventSeries("orders").counts(start - SHIPPING_DELAY, end, window)
        first = int((start - SHIPPING_DELAY) // window) * window
        span = SHIPPING_DELAY // window
        gauge = Gauge("orders_pending")
        batch = Batch()
        sets = 0
        for index in range(len(per_minute)):
            moment = first + (index + 1) * window - 1  # the minute's last second
            if moment < start or moment > end:
                continue
            gauge.set(sum(per_minute[max(0, index - span + 1) : index + 1]), moment, batch=batch)
            sets += 1
            if len(batch.calls) >= 500:
                batch.execute()
        batch.execute()
        self.stdout.write(f"orders_pending: {sets} minutes")

    def users(self, rng: random.Random, now: float, days: int, population: int) -> Visits:
        """Users join over the period; each comes back less often the longer ago they joined.
        Visits before the time history was last written are skipped (they are there). Returns
        who visited on each day."""
        name = conf.ACTIVE_USERS or "active_users"
        active = UniqueBitmap(name)
        visitors = UniqueEstimate("visitors")
        zone = get_zone()
        visits: Visits = {}
        joined = {user: rng.uniform(now - days * DAY, now) for user in range(1, population + 1)}
        marks = 0
        batch = Batch()
        for day in range(days - 1, -1, -1):
            day_start = now - day * DAY
            for user, since in joined.items():
                age_days = (day_start - since) / DAY
                if age_days < 0:
                    continue
                chance = 0.9 if age_days < 1 else 0.02 + 0.5 * math.exp(-age_days / 3)
                if rng.random() < chance:
                    # One visit in the 24 hours ending at day_start: no two loop days overlap.
                    moment = max(day_start - rng.uniform(0, 0.99 * DAY), since)
                    if moment <= self.since:
                        continue
                    active.mark(user, when=moment, batch=batch)
                    visitors.add(f"user-{user}", when=moment, batch=batch)
                    visits.setdefault(datetime.fromtimestamp(moment, zone).date(), []).append(user)
                    marks += 1
                    if len(batch.calls) >= 500:
                        batch.execute()
        batch.execute()
        self.stdout.write(f"users: {marks} daily visits by {population} users into {name!r}")
        return visits
