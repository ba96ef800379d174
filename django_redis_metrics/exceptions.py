"""The exceptions the package raises of its own, in one place and exported by the package.

Refusals of bad input are ``ValueError`` subclasses: code that catches ``ValueError`` keeps
catching them. Redis trouble of our own making is a subclass of redis-py's error of its kind,
so code (and the fail-open write path) that handles Redis errors handles it too:
``MissingPermission`` explains a ``NoPermissionError`` of the app's ACL user.
"""

from __future__ import annotations

from django.core.exceptions import MultipleObjectsReturned, ObjectDoesNotExist
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError

__all__ = [
    "AsyncPoolTimeout",
    "MetricDoesNotExist",
    "MetricsRefused",
    "MissingPermission",
    "MultipleMetricsReturned",
    "NoDayKeys",
    "NotReplicated",
]


class MetricsRefused(ValueError):
    """A write script refused this write before writing anything (``DRM_REFUSED``): bad input
    only Redis could see, such as an overflowing slice or a time ahead of the Redis clock. The
    Redis error reply is its ``__cause__``."""


class NoDayKeys(ValueError):
    """A range that is not made of whole periods, asked of a metric keeping no day keys (a
    ``UniqueBitmap`` or ``UniqueEstimate`` whose ``periods`` leave out ``"day"``)."""


class AsyncPoolTimeout(RedisConnectionError):
    """Every connection of the running loop's async pool (``ASYNC_MAX_CONNECTIONS``) stayed
    busy for ``ASYNC_POOL_TIMEOUT`` seconds: more awaits at once than the pool serves, on a
    Redis too slow to answer them in time."""


class NotReplicated(RedisConnectionError):
    """Fewer replicas than ``SENDER["REPLICAS"]`` acknowledged a batch of the sender in time:
    an outage to the sender, which keeps the batch and sends it again (exactly once), as a
    failover may be under way and the master's copy about to be lost."""


class MissingPermission(NoPermissionError):
    """Redis denied a command or a key to the ACL user of ``CONNECTION``: the message says
    which rules the user needs (docs/operations.md, "ACL users"). Its ``__cause__`` is Redis's
    own error, which inside a script does not name the command."""


class MetricDoesNotExist(LookupError, ObjectDoesNotExist):
    """No metric matched ``Model.objects.get(...)``: the base of each model's own
    ``Model.DoesNotExist`` (``Counter.DoesNotExist`` is not ``Gauge.DoesNotExist``), as in
    Django; a ``LookupError`` too, which ``objects.get(name)`` always raised."""


class MultipleMetricsReturned(MultipleObjectsReturned):
    """More than one metric matched ``Model.objects.get(...)``: the base of each model's own
    ``Model.MultipleObjectsReturned``."""


class PortTaken(RuntimeError):
    """A test server (``django_redis_metrics.testing``) could not bind its port, or its cluster
    bus port: taken by another process since it was chosen. Raised only by the testing helpers,
    so not exported by the package."""
