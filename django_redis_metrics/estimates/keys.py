"""The name of this kind of metric: the segment of its keys
(``<PREFIX>:estimate:{<name>}:...``) and the name of its catalogue. Defined here only; the model
carries it as ``UniqueEstimate.KIND``."""

from __future__ import annotations

KIND = "estimate"
