"""``manage.py check_alerts``: one evaluation pass over the declared alerts, for cron.

``clean_metrics --loop`` evaluates them on each of its passes too; both may run at once, on
several hosts: the state in Redis makes each change of state notify once.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_redis_metrics.alerts import evaluate
from django_redis_metrics.conf import conf
from django_redis_metrics.core.connection import REDIS_ERRORS, redacted


class Command(BaseCommand):
    help = (
        "Evaluate every alert declared in the apps' metrics.py once: move each to pending, "
        "firing or resolved as its value says, notify the changes (signals, mail, webhook) and "
        "retry the webhooks that failed before."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--no-webhooks",
            action="store_true",
            help="Do not send webhooks in this pass (they wait for the next one).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            report = evaluate(webhooks=not options["no_webhooks"])
        except REDIS_ERRORS as exc:
            where = redacted(conf.CONNECTION)
            raise CommandError(f"Cannot check alerts: Redis at {where!r} failed: {exc}") from exc
        if options["verbosity"] >= 1:
            self.stdout.write(report.summary())
        for name, error in report.errors.items():
            self.stderr.write(f"alert {name!r}: {error}")
