"""``manage.py generate_traffic``: a few days of realistic metrics so every chart has data."""

from __future__ import annotations

import random
import time
from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand

from django_redis_metrics import Counter


class Command(BaseCommand):
    help = "Record a few days of sample counters so the admin charts show data."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("--days", type=int, default=3)
        parser.add_argument("--seed", type=int, default=42)

    def handle(self, *args: Any, **options: Any) -> None:
        rng = random.Random(options["seed"])
        now = time.time()
        start = now - options["days"] * 86400
        for name, rate in (("page_hits", 40), ("signups", 2), ("orders", 5)):
            increments = []
            moment = start
            while moment < now:
                moment += rng.expovariate(rate / 600)
                increments.append((min(moment, now), 1))
            Counter(name).incr_many(increments)
            self.stdout.write(f"{name}: {len(increments)} increments")
