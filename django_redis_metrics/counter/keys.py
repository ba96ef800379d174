"""The name of this kind of metric: the segment of its keys
(``<PREFIX>:counter:{<name>}:...``) and the name of its catalogue. Defined here only; the model
carries it as ``Counter.KIND``."""

from __future__ import annotations

KIND = "counter"
