"""``manage.py archive_metrics``: one archive pass, copying the closed slices and periods Redis
holds into the Django database (``clean_metrics`` runs one after each of its passes too)."""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from django_redis_metrics.archive.passes import archive_all, archivers
from django_redis_metrics.conf import conf
from django_redis_metrics.core.connection import REDIS_ERRORS, redacted


class Command(BaseCommand):
    help = (
        "Archive what Redis will forget: every closed slice of counters, statistics and gauges "
        "at ARCHIVE_PRECISIONS (and the periods of the other kinds) since the last pass, into "
        "ARCHIVE_DATABASE. Idempotent: run it as often as you like, on any host."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Read and count what would be archived."
        )
        parser.add_argument(
            "--kind",
            action="append",
            dest="kinds",
            help="Archive only this kind of metric (repeatable).",
        )
        parser.add_argument(
            "--database", default=None, help="The database alias (default: ARCHIVE_DATABASE)."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        kinds: list[str] | None = options["kinds"]
        using: str | None = options["database"]
        known = archivers()
        unknown = sorted(set(kinds or ()) - set(known))
        if unknown:
            raise CommandError(
                f"Unknown kind {', '.join(map(repr, unknown))}: choose among "
                f"{', '.join(sorted(known))}."
            )
        if using is not None and using not in settings.DATABASES:
            raise CommandError(
                f"--database {using!r} is not an alias of DATABASES "
                f"({', '.join(map(repr, settings.DATABASES))})."
            )
        try:
            reports = archive_all(kinds=kinds, dry_run=options["dry_run"], using=using)
        except REDIS_ERRORS as exc:
            where = redacted(str(conf.CONNECTION))
            raise CommandError(f"Cannot archive: Redis at {where!r} failed: {exc}") from exc
        except DatabaseError as exc:
            raise CommandError(f"Cannot archive: the database failed: {exc}") from exc
        for report in reports:
            if options["verbosity"] >= 1:
                self.stdout.write(report.summary())
