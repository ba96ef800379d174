"""Statistic: aggregates and quantiles of measured values, per time slice."""

from . import aggregation  # noqa: F401 - registers how querysets combine statistics
from .model import Statistic

__all__ = ["Statistic"]
