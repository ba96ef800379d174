"""UniqueEstimate: approximate distinct items per hour, day, ISO week and month (HyperLogLog)."""

from .model import UniqueEstimate
from .query import EstimateQuery

__all__ = ["EstimateQuery", "UniqueEstimate"]
