"""The exceptions the package raises of its own, in one place and exported by the package.

``MetricsRefused`` and ``NoDayKeys`` are ``ValueError`` subclasses: code that catches
``ValueError`` for bad input keeps catching them. ``MissingPermission`` is Redis refusing the
app's user, a ``redis.exceptions.NoPermissionError`` like the one it explains.
"""

from __future__ import annotations

from redis.exceptions import NoPermissionError

__all__ = ["MetricsRefused", "MissingPermission", "NoDayKeys"]


class MetricsRefused(ValueError):
    """A write script refused this write before writing anything (``DRM_REFUSED``): bad input
    only Redis could see, such as an overflowing slice or a time ahead of the Redis clock. The
    Redis error reply is its ``__cause__``."""


class NoDayKeys(ValueError):
    """A range that is not made of whole periods, asked of a metric keeping no day keys (a
    ``UniqueBitmap`` or ``UniqueEstimate`` whose ``periods`` leave out ``"day"``)."""


class MissingPermission(NoPermissionError):
    """Redis denied a command or a key to the ACL user of ``CONNECTION``: the message says
    which rules the user needs (docs/operations.md, "ACL users"). Its ``__cause__`` is Redis's
    own error, which inside a script does not name the command."""
