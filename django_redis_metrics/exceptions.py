"""The exceptions the package raises of its own, in one place and exported by the package.

Both are ``ValueError`` subclasses: code that catches ``ValueError`` for bad input keeps
catching them.
"""

from __future__ import annotations

__all__ = ["MetricsRefused", "NoDayKeys"]


class MetricsRefused(ValueError):
    """A write script refused this write before writing anything (``DRM_REFUSED``): bad input
    only Redis could see, such as an overflowing slice or a time ahead of the Redis clock. The
    Redis error reply is its ``__cause__``."""


class NoDayKeys(ValueError):
    """A range that is not made of whole periods, asked of a metric keeping no day keys (a
    ``UniqueBitmap`` or ``UniqueEstimate`` whose ``periods`` leave out ``"day"``)."""
