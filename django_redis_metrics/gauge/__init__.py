"""Gauge: a value that goes up and down, its latest value and its last, min and max per slice."""

from .model import Gauge

__all__ = ["Gauge"]
