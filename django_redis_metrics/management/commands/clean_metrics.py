"""``manage.py clean_metrics``: trim every metric to its retention, once or as a daemon."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from redis.exceptions import RedisError

from django_redis_metrics import cleanup
from django_redis_metrics.conf import conf
from django_redis_metrics.connection import get_redis_connection
from django_redis_metrics.failopen import redacted


class Command(BaseCommand):
    help = (
        "Remove metric data older than its retention: counter slices beyond their samples, "
        "and metrics left empty. One pass by default; --loop runs as a daemon."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would be removed; change nothing."
        )
        parser.add_argument(
            "--loop", action="store_true",
            help="Keep cleaning, a pass about every --interval seconds (coarse precisions less "
            "often), until interrupted.",
        )
        parser.add_argument(
            "--interval", type=float, default=cleanup.PASS_INTERVAL,
            help="Seconds between passes with --loop (default: %(default)s).",
        )
        parser.add_argument(
            "--max-passes", type=int, default=None, help="With --loop, stop after this many passes."
        )
        parser.add_argument(
            "--kind", action="append", choices=sorted(cleanup.CLEANERS), dest="kinds",
            help="Clean only this kind of metric (repeatable).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity: int = options["verbosity"]
        if options["interval"] <= 0:
            raise CommandError("--interval must be a positive number of seconds.")
        if options["max_passes"] is not None and options["max_passes"] < 1:
            raise CommandError("--max-passes must be at least 1.")
        kinds = options["kinds"]
        dry_run: bool = options["dry_run"]
        where = redacted(conf.CONNECTION)
        try:
            get_redis_connection().ping()
        except (RedisError, OSError, ImproperlyConfigured) as exc:
            raise CommandError(
                f"Cannot clean metrics: Redis at {where!r} cannot be reached: {exc}"
            ) from exc
        if verbosity >= 2:
            mode = " (dry run: nothing is changed)" if dry_run else ""
            self.stdout.write(f"Cleaning metrics under prefix {conf.PREFIX!r} at {where}{mode}.")

        def report(passes: int, reports: list[cleanup.CleanupReport]) -> None:
            for item in reports:
                if verbosity >= 1:
                    self.stdout.write(f"pass {passes}: {item.summary()}")
                if verbosity >= 2:
                    for line in item.details:
                        self.stdout.write(f"  {line}")
            if verbosity >= 1 and dry_run:
                self.stdout.write(f"pass {passes}: dry run, nothing was changed.")

        try:
            if options["loop"]:
                passes = cleanup.run_loop(
                    report,
                    interval=options["interval"],
                    max_passes=options["max_passes"],
                    dry_run=dry_run,
                    kinds=kinds,
                )
                if verbosity >= 2:
                    self.stdout.write(f"Stopped after {passes} passes.")
            else:
                report(0, cleanup.clean_all(dry_run=dry_run, kinds=kinds))
        except (RedisError, OSError) as exc:
            raise CommandError(f"Cannot clean metrics: Redis at {where!r} failed: {exc}") from exc
        except KeyboardInterrupt:
            self.stdout.write("Interrupted; stopping.")
