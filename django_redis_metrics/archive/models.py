"""The archive's tables, in the site's Django database (the alias ``ARCHIVE_DATABASE`` names).

Every row is keyed by what it describes (kind, series, precision or period, start), so the
archive is written by upserts (``bulk_create(update_conflicts=True)``) that *set* the values
Redis holds: a pass run twice, or on two hosts at once, writes the same row twice and counts
nothing twice, and a slice archived before it closed is corrected by the next pass.

Times are epoch seconds (UTC), as in Redis; a *series* is a catalogue member: a metric's own
name, or ``name\\x1flabel=value...`` for a labelled series (``core/labels/labelling.py``), so
labels are kept with the history they label. ``metric`` is the metric's own name, for the
reads that aggregate every series of a labelled metric.
"""

from __future__ import annotations

from django.db import models


class ArchivedSlice(models.Model):
    """One time slice of a counter, statistic or gauge series, at one precision.

    A counter fills ``count``; a statistic ``count``, ``total`` (the sum), ``sum_squares``,
    ``minimum``, ``maximum`` and ``histogram`` (its log-scale buckets, ``{bucket: count}``, so
    quantiles of any archived range keep the statistic's bound); a gauge ``last``,
    ``minimum`` and ``maximum`` (and ``count``, the values set).
    """

    id = models.BigAutoField(primary_key=True)  # years of slices outgrow 2**31 rows
    kind = models.CharField(max_length=32)
    series = models.TextField()
    metric = models.CharField(max_length=200)
    precision = models.PositiveIntegerField(help_text="Slice length in seconds.")
    start = models.BigIntegerField(help_text="Slice start, epoch seconds (UTC).")
    count = models.BigIntegerField(default=0)
    total = models.FloatField(null=True, blank=True)
    sum_squares = models.FloatField(null=True, blank=True)
    minimum = models.FloatField(null=True, blank=True)
    maximum = models.FloatField(null=True, blank=True)
    last = models.FloatField(null=True, blank=True)
    histogram = models.JSONField(null=True, blank=True)

    class Meta:
        verbose_name = "archived slice"
        verbose_name_plural = "archived slices"
        default_permissions = ()
        constraints = (
            models.UniqueConstraint(
                fields=("kind", "series", "precision", "start"), name="drm_slice_unique"
            ),
        )
        indexes = (
            models.Index(fields=("kind", "metric", "precision", "start"), name="drm_slice_metric"),
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.series!r} {self.precision}s @ {self.start}"


class ArchivedPeriod(models.Model):
    """One period of a unique bitmap, unique estimate or event series.

    ``count`` is the period's count (distinct ids, estimated distinct items, events); ``data``
    keeps what later unions need: a bitmap's bits (weeks and months, zlib-compressed), an
    estimate's HyperLogLog registers (as Redis serialises them), nothing for event series.
    """

    id = models.BigAutoField(primary_key=True)  # years of slices outgrow 2**31 rows
    kind = models.CharField(max_length=32)
    series = models.TextField()
    metric = models.CharField(max_length=200)
    period = models.CharField(max_length=16, help_text='"hour", "day", "week" or "month".')
    start = models.BigIntegerField(help_text="Period start, epoch seconds (UTC).")
    count = models.BigIntegerField(default=0)
    data = models.BinaryField(null=True, blank=True)

    class Meta:
        verbose_name = "archived period"
        verbose_name_plural = "archived periods"
        default_permissions = ()
        constraints = (
            models.UniqueConstraint(
                fields=("kind", "series", "period", "start"), name="drm_period_unique"
            ),
        )
        indexes = (
            models.Index(fields=("kind", "metric", "period", "start"), name="drm_period_metric"),
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.series!r} {self.period} @ {self.start}"


class ArchivedBreakdown(models.Model):
    """An event series' count of one day for one value of one of its indexed fields."""

    id = models.BigAutoField(primary_key=True)  # years of slices outgrow 2**31 rows
    series = models.CharField(max_length=200)
    field = models.CharField(max_length=100)
    value = models.TextField()
    start = models.BigIntegerField(help_text="Day start, epoch seconds (UTC).")
    count = models.BigIntegerField(default=0)

    class Meta:
        verbose_name = "archived breakdown"
        verbose_name_plural = "archived breakdowns"
        default_permissions = ()
        constraints = (
            models.UniqueConstraint(
                fields=("series", "field", "value", "start"), name="drm_breakdown_unique"
            ),
        )

    def __str__(self) -> str:
        return f"{self.series!r} {self.field}={self.value!r} @ {self.start}"


class ArchiveCursor(models.Model):
    """How far one kind's precision (or period) has been archived: a pass resumes here."""

    kind = models.CharField(max_length=32)
    precision = models.CharField(max_length=16, help_text="Seconds, or a period's name.")
    until = models.BigIntegerField(help_text="Archived up to here, epoch seconds (UTC).")
    updated = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "archive cursor"
        verbose_name_plural = "archive cursors"
        default_permissions = ()
        constraints = (
            models.UniqueConstraint(fields=("kind", "precision"), name="drm_cursor_unique"),
        )

    def __str__(self) -> str:
        return f"{self.kind} {self.precision}: {self.until}"
