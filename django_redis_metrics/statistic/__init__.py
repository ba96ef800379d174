"""Statistic: aggregates and quantiles of measured values, per time slice."""

from .model import Statistic

__all__ = ["Statistic"]
