"""The name of this kind of metric: the segment of its keys
(``<PREFIX>:bitmap:{<name>}:...``) and the name of its catalogue. Defined here only; the model
carries it as ``UniqueBitmap.KIND``."""

from __future__ import annotations

KIND = "bitmap"
