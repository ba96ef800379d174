"""``manage.py annotate_metrics "Deploy v1.4" --tag deploy``: an annotation from a deploy script."""

from __future__ import annotations

import zoneinfo
from argparse import ArgumentParser
from datetime import datetime
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from django_redis_metrics.annotations import annotate
from django_redis_metrics.annotations.inputs import parse_when
from django_redis_metrics.conf import conf
from django_redis_metrics.core.connection import REDIS_ERRORS, redacted
from django_redis_metrics.exceptions import MetricsRefused


class Command(BaseCommand):
    help = "Store an annotation, drawn on every chart of its time (e.g. a deploy)."

    def add_arguments(self, parser: ArgumentParser) -> None:
        parser.add_argument("text", help='What happened, e.g. "Deploy v1.4".')
        parser.add_argument(
            "--tag",
            action="append",
            default=[],
            dest="tags",
            help="A tag (letters, digits, _ . : / -); repeat for several.",
        )
        parser.add_argument(
            "--when",
            help="Epoch seconds or ISO 8601 (without an offset: TIME_ZONE's wall clock); "
            "default: now.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            when = parse_when(options["when"]) if options["when"] else None
            stored = annotate(options["text"], when=when, tags=options["tags"])
        except (TypeError, ValueError, MetricsRefused) as exc:
            raise CommandError(str(exc)) from exc
        except REDIS_ERRORS as exc:
            raise CommandError(
                f"Redis at {redacted(conf.CONNECTION)} is unreachable ({exc}): nothing stored."
            ) from exc
        zone = zoneinfo.ZoneInfo(conf.TIME_ZONE)
        at = datetime.fromtimestamp(stored["when"], zone).isoformat(timespec="seconds")
        tags = f" [{', '.join(stored['tags'])}]" if stored["tags"] else ""
        self.stdout.write(f"Annotated {at}: {stored['text']}{tags}")
