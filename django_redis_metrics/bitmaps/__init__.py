"""UniqueBitmap: unique users per hour, day, ISO week and month, in Redis bitmaps."""

from .model import UniqueBitmap
from .query import BitmapQuery

__all__ = ["BitmapQuery", "UniqueBitmap"]
