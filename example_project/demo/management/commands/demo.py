"""``manage.py demo``: migrate, create the demo admin account, record some data, serve."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

DEMO_USERNAME = "admin"
DEMO_PASSWORD = "metrics-demo"


class Command(BaseCommand):
    help = "Set up the demo site (database, admin account, sample metrics) and run it."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")
        parser.add_argument("--no-serve", action="store_true", help="Set up only; do not serve.")

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("migrate", verbosity=0, interactive=False)
        user_model = get_user_model()
        user, _ = user_model.objects.get_or_create(
            username=DEMO_USERNAME, defaults={"is_staff": True, "is_superuser": True}
        )
        user.set_password(DEMO_PASSWORD)
        user.save()
        call_command("generate_traffic")
        self.stdout.write(
            f"Demo admin: http://{options['addrport']}/admin/  "
            f"user {DEMO_USERNAME!r}, password {DEMO_PASSWORD!r}"
        )
        if not options["no_serve"]:
            call_command("runserver", options["addrport"], use_reloader=False)
