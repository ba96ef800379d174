"""Django signals the app sends.

``alert_fired`` and ``alert_resolved``: sent once per change of an alert's state, by the
evaluator whose evaluation made it (``alerts/evaluation.py``), with ``sender=Alert`` and the
keyword arguments ``alert`` (the :class:`~django_redis_metrics.alerts.Alert`), ``value`` (its
value then, ``None`` for no data), ``at`` (epoch seconds of the evaluation) and ``previous``
(the state it left).
"""

from __future__ import annotations

from django.dispatch import Signal

alert_fired = Signal()
alert_resolved = Signal()
