"""Counter: named counters at several precisions (Redis in Action, section 5.2.1)."""

from .model import Counter

__all__ = ["Counter"]
