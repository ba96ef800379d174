"""``manage.py import_metrics``: history older than Redis keeps, loaded into the archive.

``--csv FILE --name hits --precision 86400`` reads the admin's CSV export back;
``--redis-metrics redis://old-host/0`` reads a django-redis-metrics 2.2 keyspace. The logic
lives in ``archive/imports/``; this command parses options and says what was done.
"""

from __future__ import annotations

from argparse import ArgumentParser
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from django_redis_metrics.archive.imports import csvfile, redis22
from django_redis_metrics.archive.imports.writing import (
    COUNTER_FIELDS,
    GAUGE_FIELDS,
    Summary,
    parse_target,
    utc,
    write,
)
from django_redis_metrics.conf import conf
from django_redis_metrics.core.connection import REDIS_ERRORS, client_for_url, redacted


class Command(BaseCommand):
    help = (
        "Load history older than Redis keeps into the archive: from the admin's CSV export "
        "(--csv) or from a django-redis-metrics 2.2 keyspace (--redis-metrics)."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--csv", metavar="FILE", help="A CSV exported by the admin's charts.")
        source.add_argument(
            "--redis-metrics",
            metavar="URL",
            help="The redis:// URL of a Redis holding django-redis-metrics 2.2's keys.",
        )
        parser.add_argument(
            "--kind",
            default="counter",
            choices=("counter", "gauge", "statistic"),
            help="--csv: the kind of metric exported (default: counter; statistics are refused).",
        )
        parser.add_argument(
            "--precision",
            type=int,
            metavar="SECONDS",
            help="--csv: the slice length of the export; one of ARCHIVE_PRECISIONS.",
        )
        parser.add_argument(
            "--name", help="--csv: the metric the 'value' column goes to (NAME or NAME{l=v,...})."
        )
        parser.add_argument(
            "--column",
            nargs=2,
            action="append",
            default=[],
            metavar=("HEADING", "NAME"),
            help="--csv: import the column HEADING into NAME (or NAME{label=value,...}); repeat.",
        )
        parser.add_argument(
            "--prefix",
            default="",
            help="--redis-metrics: the text before 'm:' in every key (default: none).",
        )
        parser.add_argument(
            "--rename",
            nargs=2,
            action="append",
            default=[],
            metavar=("SLUG", "NAME"),
            help="--redis-metrics: import SLUG's counts as NAME (default: the slug); repeat.",
        )
        parser.add_argument(
            "--database",
            help="The database alias written to (default: ARCHIVE_DATABASE).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Check and say what would be imported."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        using = options["database"] or conf.ARCHIVE_DATABASE
        if using not in settings.DATABASES:
            known = ", ".join(map(repr, settings.DATABASES))
            raise CommandError(f"--database {using!r} is not in DATABASES, which has {known}.")
        summary = Summary(dry_run=options["dry_run"])
        try:
            if options["csv"]:
                self.from_csv(options, using, summary)
            else:
                self.from_redis_metrics(options, using, summary)
        except (TypeError, ValueError) as exc:
            raise CommandError(f"{exc} Nothing was imported.") from exc
        for line in summary.lines():
            self.stdout.write(line)

    def from_csv(self, options: dict[str, Any], using: str, summary: Summary) -> None:
        if options["rename"] or options["prefix"]:
            raise ValueError("--rename and --prefix go with --redis-metrics, not --csv.")
        precision = options["precision"]
        if precision is None:
            raise ValueError("--csv needs --precision: the slice length of the export.")
        if precision not in conf.ARCHIVE_PRECISIONS:
            raise ValueError(
                f"--precision {precision}: the archive keeps slices of "
                f"{', '.join(map(str, conf.ARCHIVE_PRECISIONS)) or 'no length'} seconds "
                "(ARCHIVE_PRECISIONS)."
            )
        path = options["csv"]
        try:
            plan = csvfile.plan(
                path,
                options["kind"],
                precision,
                parse_target(options["name"]) if options["name"] is not None else None,
                [(heading, parse_target(name)) for heading, name in options["column"]],
            )
            still_open: list[int] = []
            for _ in csvfile.rows(plan, still_open):  # every line checked before one is written
                pass
            fields = GAUGE_FIELDS if plan.kind == "gauge" else COUNTER_FIELDS
            with transaction.atomic(using=using):
                write(
                    csvfile.rows(plan),
                    fields,
                    using=using,
                    batch=conf.ARCHIVE_BATCH,
                    summary=summary,
                )
        except OSError as exc:
            raise CommandError(f"{path}: {exc.strerror or exc}. Nothing was imported.") from exc
        except UnicodeDecodeError as exc:
            raise CommandError(f"{path} is not UTF-8 text ({exc}). Nothing was imported.") from exc
        if plan.ignored:
            self.stdout.write(f"Columns not imported: {', '.join(map(repr, plan.ignored))}")
        if still_open:
            self.stdout.write(
                f"Not imported: {len(still_open)} slice(s) still open, from {utc(still_open[0])} "
                "(the archive passes archive them from Redis once they close)."
            )

    def from_redis_metrics(self, options: dict[str, Any], using: str, summary: Summary) -> None:
        if options["column"] or options["name"] or options["precision"] is not None:
            raise ValueError("--name, --column and --precision go with --csv.")
        renames = redis22.targets(options["rename"])
        redis22.precisions_read(conf.ARCHIVE_PRECISIONS)
        url = options["redis_metrics"]
        client = client_for_url(url)
        try:
            skipped = redis22.import_keyspace(
                client,
                prefix=options["prefix"],
                renames=renames,
                precisions=conf.ARCHIVE_PRECISIONS,
                using=using,
                batch=conf.ARCHIVE_BATCH,
                summary=summary,
            )
        except REDIS_ERRORS as exc:
            raise CommandError(
                f"Redis at {redacted(url)} failed ({exc}): the slices of the steps before are "
                "imported; run the import again to finish it (it writes the same rows)."
            ) from exc
        finally:
            client.close()
        if skipped.count:
            self.stderr.write(f"Skipped {skipped.count:,} keys that 2.2 does not write:")
            for line in skipped.shown:
                self.stderr.write(f"  {line}")
