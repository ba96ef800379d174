"""Realtime metrics for Django, stored in Redis: counters, event series, unique-user bitmaps and
unique estimates."""

from .alerts import Alert
from .annotations import aannotate, aannotations, annotate, annotations
from .bitmaps import UniqueBitmap
from .core.batch import Batch
from .core.connection import get_redis_connection
from .counter import Counter
from .estimates import UniqueEstimate
from .events import EventSeries
from .exceptions import (
    AsyncPoolTimeout,
    MetricDoesNotExist,
    MetricsRefused,
    MissingPermission,
    MultipleMetricsReturned,
    NoDayKeys,
    NotReplicated,
)
from .funnels import Funnel
from .gauge import Gauge
from .sending.sender import flush
from .statistic import Statistic

__all__ = [
    "Alert",
    "AsyncPoolTimeout",
    "Batch",
    "Counter",
    "EventSeries",
    "Funnel",
    "Gauge",
    "MetricDoesNotExist",
    "MetricsRefused",
    "MissingPermission",
    "MultipleMetricsReturned",
    "NoDayKeys",
    "NotReplicated",
    "Statistic",
    "UniqueBitmap",
    "UniqueEstimate",
    "aannotate",
    "aannotations",
    "annotate",
    "annotations",
    "flush",
    "get_redis_connection",
]
__version__ = "0.1.0"
