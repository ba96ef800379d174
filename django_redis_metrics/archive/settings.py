"""The archive's settings, declared as the others are (``conf.py``: default, type, check id,
doc line) in a table of their own that ``conf.Settings`` extends."""

from __future__ import annotations

from ..defaults import ints
from ..setting import PACKAGE, Setting

#: The precisions archived by default: hourly and daily slices.
DEFAULT_ARCHIVE_PRECISIONS = (3600, 86400)


class ArchiveSettings:
    """The archive's keys of ``DJANGO_REDIS_METRICS`` (read through ``conf.Settings``)."""

    ARCHIVE_DATABASE: Setting[str] = Setting(
        "default",
        str,
        "The alias of the Django database that keeps the [history](history.md) Redis forgets "
        "(its tables come with the app's migrations: migrate that database).",
        check="E090",
        validator=f"{PACKAGE}.archive.bounds.validate_database",
    )

    ARCHIVE_PRECISIONS: Setting[tuple[int, ...]] = Setting(
        DEFAULT_ARCHIVE_PRECISIONS,
        ints,
        "Slice lengths, in seconds, of counters, statistics and gauges that archive passes keep "
        "(each must be one of the kind's precisions); `()` archives none. Each costs one row per "
        "series and slice.",
        check="E091",
        validator=f"{PACKAGE}.archive.bounds.validate_precisions",
    )

    ARCHIVE_BATCH: Setting[int] = Setting(
        500,
        int,
        "Series one archive step reads from Redis and writes to the database at a time (1 to "
        "10,000): a pass holds at most this many series' slices in memory.",
        check="E092",
        validator=f"{PACKAGE}.archive.bounds.validate_batch",
    )
