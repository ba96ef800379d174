"""``manage.py demo``: migrate, create the demo admin account, record some data, serve.

While serving, a few simulated visitors browse the shop (through the real middleware and view
decorators) at the generated history's rates (``demo/traffic.py``), so that the live charts
move and continue the past. SIGTERM (``kill``, docker, systemd) stops the demo as Ctrl-C does.
"""

from __future__ import annotations

import contextlib
import random
import signal
import threading
import time
from argparse import ArgumentParser
from types import FrameType
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.test import Client
from django.urls import reverse

from django_redis_metrics import flush

from ...metrics import SHIPPING_DELAY, orders, orders_pending
from ...traffic import SIGNED_IN, mark_written, next_visit, pick_country, pick_file, pick_product

DEMO_USERNAME = "admin"
DEMO_PASSWORD = "metrics-demo"


class Command(BaseCommand):
    help = "Set up the demo site (database, admin account, sample metrics) and run it."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-serve", action="store_true", help="Set up only; do not serve.")
        parser.add_argument(
            "--no-visitors", action="store_true", help="Do not simulate visitors while serving."
        )
        parser.add_argument(
            "--no-traffic",
            action="store_true",
            help="Do not generate past traffic (the browser test counts its own hits).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0, interactive=False)
        user_model = get_user_model()
        user, _ = user_model.objects.get_or_create(
            username=DEMO_USERNAME, defaults={"is_staff": True, "is_superuser": True}
        )
        user.set_password(DEMO_PASSWORD)
        user.save()
        if not options["no_traffic"]:
            call_command("generate_traffic")
        self.stdout.write(
            f"Demo admin: http://{options['addrport']}/admin/  "
            f"user {DEMO_USERNAME!r}, password {DEMO_PASSWORD!r}"
        )
        if options["no_serve"]:
            return
        embedded = getattr(settings, "EMBEDDED_REDIS", None)
        if embedded is not None:
            self.stdout.write(f"Embedded Redis: pid {embedded.pid}, {embedded.socket_file}")
        stop = threading.Event()
        signal.signal(signal.SIGTERM, interrupt)
        visitors_thread = None
        if not options["no_visitors"]:
            visitors = [
                user_model.objects.get_or_create(username=f"visitor{i}")[0] for i in range(1, 6)
            ]
            visitors_thread = threading.Thread(
                target=simulate_visitors, args=(visitors,), kwargs={"stop": stop}, daemon=True
            )
            visitors_thread.start()
        try:
            call_command("runserver", options["addrport"], use_reloader=False)
        except KeyboardInterrupt:
            self.stdout.write("Stopping the demo.")
        finally:
            # No visitor may reconnect while the settings' exit handler closes the pools and
            # shuts the embedded Redis down.
            stop.set()
            if visitors_thread is not None:
                visitors_thread.join(timeout=10)
                # The visitors wrote the history of this session: not to be generated again.
                with contextlib.suppress(Exception):
                    mark_written(time.time())
            flush(timeout=2)


def interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM stops the demo the way Ctrl-C does, so the embedded Redis is shut down too."""
    raise KeyboardInterrupt


def simulate_visitors(users: list[Any], stop: threading.Event | None = None) -> None:
    """Browse the shop until ``stop`` is set, as anonymous or signed-in visitors, through the
    whole stack, at the rate and in the mix of views of the generated history."""
    stop = stop or threading.Event()
    rng = random.Random()
    clients = [Client() for _ in users]
    for client, user in zip(clients, users, strict=True):
        client.force_login(user)
    anonymous = Client()
    next_gauge = 0.0
    while not stop.is_set():
        delay, view = next_visit(rng, time.time())
        if stop.wait(delay):
            return
        now = time.time()
        if now >= next_gauge:  # once a minute, as generate_traffic's history has it
            next_gauge = now + 60
            with contextlib.suppress(Exception):  # Redis away: the next minute sets it
                orders_pending.set(orders.count(now - SHIPPING_DELAY, now), now, defer=True)
        client = rng.choice(clients) if rng.random() < SIGNED_IN else anonymous
        product = pick_product(rng)
        try:
            if view == "home":
                client.get(reverse("home"))
            elif view == "product":
                client.get(reverse("product", args=[product]))
            elif view == "download":
                client.get(reverse("download", args=[pick_file(rng)]))
            elif view == "buy":
                client.post(reverse("buy", args=[product]), {"country": pick_country(rng)})
            else:
                client.post(reverse("signup"))
        except Exception:  # keep browsing whatever happens
            stop.wait(5)
