"""EventSeries: every event kept, indexed by time and by the fields you choose."""

from .model import EventSeries

__all__ = ["EventSeries"]
