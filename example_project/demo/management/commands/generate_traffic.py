"""``manage.py generate_traffic``: a few days of realistic metrics so every chart has data.

Writes what the middleware and the demo's decorators would have written, at the rates the
simulated visitors browse at (``demo/traffic.py``): page hits per view (busier by day than by
night), sign-ups, orders and downloads as events with the fields live ones carry, and signed-in
users in the ``active_users`` and ``buyers`` bitmaps, with new users arriving every day and fewer
of them coming back as weeks pass (so the retention table has a shape).

Idempotent: only the time since history was last written (generated, or browsed live while
``demo`` served) is generated, so running it again adds nothing twice.
"""

from __future__ import annotations

import math
import random
import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_redis_metrics import Batch, Counter, EventSeries, Statistic, UniqueBitmap
from django_redis_metrics.conf import conf
from django_redis_metrics.decorators import USER_FIELD, VIEW_FIELD

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
        start = max(now - options["days"] * DAY, self.since)
        self.hits(rng, start, now)
        self.events(rng, start, now, options["users"])
        self.users(rng, now, options["user_days"], options["users"])
        mark_written(now)

    def hits(self, rng: random.Random, start: float, end: float) -> None:
        site: list[tuple[float, int]] = []
        template = conf.VIEW_COUNTER or "hits:{view}"
        for view, rate in VIEW_RATES.items():
            moments = arrivals(rng, start, end, rate)
            site += [(moment, 1) for moment in moments]
            Counter(template.replace("{view}", view)).incr_many((m, 1) for m in moments)
            if view == "signup":  # every sign-up request is counted by @count(signups)
                Counter("signups").incr_many((m, 1) for m in moments)
            self.health(rng, view, moments)
        if conf.HITS_COUNTER:
            Counter(conf.HITS_COUNTER).incr_many(site)
        self.stdout.write(f"hits: {len(site)} page views over {len(VIEW_RATES)} views")

    def health(self, rng: random.Random, view: str, moments: list[float]) -> None:
        """What the middleware records beside each hit: the status class (``VIEW_STATUS``) and
        the response time (``VIEW_TIMER``), so the Views page has a history."""
        if conf.VIEW_STATUS:
            classes: dict[str, list[tuple[float, int]]] = {}
            for moment in moments:
                classes.setdefault(pick_status_class(rng, view), []).append((moment, 1))
            for cls, hits in classes.items():
                name = conf.VIEW_STATUS.replace("{view}", view).replace("{class}", cls)
                Counter(name).incr_many(hits)
        if conf.VIEW_TIMER:
            timer = Statistic(conf.VIEW_TIMER.replace("{view}", view))
            batch = Batch()
            for moment in moments:
                timer.record(pick_latency(rng, view), when=moment, batch=batch)
                if len(batch.calls) >= 500:
                    batch.execute()
            batch.execute()

    def events(self, rng: random.Random, start: float, end: float, users: int) -> None:
        """Orders and downloads with the fields ``@track_event`` gives live ones: the view's
        name, the URL's keyword arguments, the order's country, and the user when signed in."""
        orders = []
        for moment in arrivals(rng, start, end, VIEW_RATES["buy"]):
            order: dict[str, Any] = {
                "when": moment,
                VIEW_FIELD: "buy",
                "product": pick_product(rng),
                "country": pick_country(rng),
            }
            if rng.random() < SIGNED_IN:
                order[USER_FIELD] = rng.randrange(1, users + 1)
            orders.append(order)
        EventSeries("orders", index=["product", "country"]).record_many(orders)
        downloads = [
            {"when": moment, VIEW_FIELD: "download", "file": pick_file(rng)}
            for moment in arrivals(rng, start, end, VIEW_RATES["download"])
        ]
        EventSeries("downloads", index=["file"]).record_many(downloads)
        buyers = UniqueBitmap("buyers")
        batch = Batch()
        for order in orders:
            if USER_FIELD in order:  # @mark(buyers) marks signed-in buyers only
                buyers.mark(order[USER_FIELD], when=order["when"], batch=batch)
            if len(batch.calls) >= 500:
                batch.execute()
        batch.execute()
        self.stdout.write(f"events: {len(orders)} orders, {len(downloads)} downloads")

    def users(self, rng: random.Random, now: float, days: int, population: int) -> None:
        """Users join over the period; each comes back less often the longer ago they joined.
        Visits before the time history was last written are skipped (they are there)."""
        name = conf.ACTIVE_USERS or "active_users"
        active = UniqueBitmap(name)
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
                    marks += 1
                    if len(batch.calls) >= 500:
                        batch.execute()
        batch.execute()
        self.stdout.write(f"users: {marks} daily visits by {population} users into {name!r}")
