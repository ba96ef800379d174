"""The name of this kind of metric: the segment of its keys
(``<PREFIX>:gauge:{<name>}:...``) and the name of its catalogue. Defined here only; the model
carries it as ``Gauge.KIND``."""

from __future__ import annotations

KIND = "gauge"
