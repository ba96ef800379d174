"""``manage.py clean_metrics``: trim every metric to its retention, once or as a daemon."""

from __future__ import annotations

import signal
import threading
from argparse import ArgumentParser
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from django_redis_metrics import cleanup
from django_redis_metrics.alerts import declared, evaluate
from django_redis_metrics.archive.passes import archive_all, archivers
from django_redis_metrics.conf import conf
from django_redis_metrics.core.cleaning import CleanupReport, forget_sweep
from django_redis_metrics.core.connection import REDIS_ERRORS, get_redis_connection, redacted

#: What the initial connectivity check turns into a clear error (and a non-zero exit).
STARTUP_ERRORS: tuple[type[Exception], ...] = (*REDIS_ERRORS, ImproperlyConfigured)


@contextmanager
def stop_on_sigterm(stop: threading.Event) -> Iterator[None]:
    """While inside, SIGTERM sets ``stop`` (the loop ends after its current pass or sleep)
    instead of killing the process; outside the main thread, signals are left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class Command(BaseCommand):
    help = (
        "Remove metric data older than its retention before now (writes keep every metric "
        "within its retention; this removes sooner what metrics nobody writes any more leave "
        "behind), compact counter hashes that shrank, and forget metrics left empty; each pass "
        "evaluates the declared alerts and archives what Redis will forget (archive_metrics), "
        "unless --no-archive. One pass by default; --loop runs as a daemon."
    )

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would be removed; change nothing."
        )
        parser.add_argument(
            "--loop",
            action="store_true",
            help="Keep cleaning, a pass about every --interval seconds (coarse precisions less "
            "often), until interrupted (Ctrl-C or SIGTERM). A Redis outage is logged and the "
            "pass retried after the interval.",
        )
        parser.add_argument(
            "--interval",
            type=float,
            default=None,
            help=f"Seconds between passes with --loop (default: {cleanup.PASS_INTERVAL}).",
        )
        parser.add_argument(
            "--max-passes", type=int, default=None, help="With --loop, stop after this many passes."
        )
        parser.add_argument(
            "--kind",
            action="append",
            choices=sorted(cleanup.CLEANERS),
            dest="kinds",
            help="Clean only this kind of metric (repeatable).",
        )
        parser.add_argument(
            "--sweep-temporary",
            action="store_true",
            help="Look for stray temporary keys in the whole database again (a SCAN of every key, "
            "done once by the first pass over a database; see docs/operations.md).",
        )

        parser.add_argument(
            "--no-archive",
            action="store_true",
            help="Skip the archive pass that follows each cleaning pass (archive_metrics).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        verbosity: int = options["verbosity"]
        loop: bool = options["loop"]
        interval: float | None = options["interval"]
        max_passes: int | None = options["max_passes"]
        if not loop and (interval is not None or max_passes is not None):
            raise CommandError("--interval and --max-passes only apply with --loop.")
        if interval is not None and not interval > 0:
            raise CommandError("--interval must be a positive number of seconds.")
        if max_passes is not None and max_passes < 1:
            raise CommandError("--max-passes must be at least 1.")
        kinds = options["kinds"]
        dry_run: bool = options["dry_run"]
        where = redacted(conf.CONNECTION)
        try:
            get_redis_connection().ping()
        except STARTUP_ERRORS as exc:
            raise CommandError(
                f"Cannot clean metrics: Redis at {where!r} cannot be reached: {exc}"
            ) from exc
        if options["sweep_temporary"] and not dry_run:
            forget_sweep()
        if verbosity >= 2:
            mode = " (dry run: nothing is changed)" if dry_run else ""
            self.stdout.write(f"Cleaning metrics under prefix {conf.PREFIX!r} at {where}{mode}.")
        failing = [False]

        def report(passes: int, reports: list[CleanupReport]) -> None:
            if failing[0]:
                failing[0] = False
                self.stderr.write(f"pass {passes}: Redis at {where!r} answers again; cleaning.")
            for item in reports:
                if verbosity >= 1:
                    self.stdout.write(f"pass {passes}: {item.summary()}")
                if verbosity >= 2:
                    for line in item.details:
                        self.stdout.write(f"  {line}")
            if verbosity >= 1 and dry_run:
                self.stdout.write(f"pass {passes}: dry run, nothing was changed.")
            if declared() and not dry_run:
                alerts(passes)
            if not options["no_archive"]:
                archive(passes)

        def archive(passes: int) -> None:
            """One archive pass of the kinds cleaned; a database error is reported and the
            cleaning goes on (the next pass archives what this one could not)."""
            chosen = None if kinds is None else [k for k in kinds if k in archivers()]
            try:
                archived = archive_all(kinds=chosen, dry_run=dry_run)
            except DatabaseError as exc:
                self.stderr.write(f"pass {passes}: archive: the database failed: {exc}")
                return
            except REDIS_ERRORS as exc:
                if not loop:
                    raise
                error(passes, exc)
                return
            for item in archived:
                if verbosity >= 1:
                    self.stdout.write(f"pass {passes}: archive: {item.summary()}")

        def alerts(passes: int) -> None:
            """The declared alerts evaluated, their webhooks bounded by
            ALERTS["PASS_SECONDS"] (docs/alerts.md); an outage is the loop's to report."""
            try:
                evaluated = evaluate()
            except REDIS_ERRORS as exc:
                if not loop:
                    raise
                error(passes, exc)
                return
            if verbosity >= 1:
                self.stdout.write(f"pass {passes}: {evaluated.summary()}")
            for name, why in evaluated.errors.items():
                self.stderr.write(f"pass {passes}: alert {name!r}: {why}")

        def error(passes: int, exc: Exception) -> None:
            """Once per outage: the daemon keeps trying, a pass per interval."""
            if not failing[0]:
                failing[0] = True
                self.stderr.write(
                    f"pass {passes}: Redis at {where!r} failed: {exc}; retrying every "
                    f"{interval or cleanup.PASS_INTERVAL:g} s until it answers."
                )

        stop = threading.Event()
        try:
            if loop:
                with stop_on_sigterm(stop):
                    passes = cleanup.run_loop(
                        report,
                        interval=interval or cleanup.PASS_INTERVAL,
                        max_passes=max_passes,
                        dry_run=dry_run,
                        kinds=kinds,
                        should_stop=stop.is_set,
                        sleep=stop.wait,
                        on_error=error,
                    )
                if verbosity >= 2 or stop.is_set():
                    why = " (SIGTERM)" if stop.is_set() else ""
                    self.stdout.write(f"Stopped after {passes} passes{why}.")
            else:
                report(0, cleanup.clean_all(dry_run=dry_run, kinds=kinds))
        except REDIS_ERRORS as exc:
            raise CommandError(f"Cannot clean metrics: Redis at {where!r} failed: {exc}") from exc
        except KeyboardInterrupt:
            self.stdout.write("Interrupted; stopping.")
