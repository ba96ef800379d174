"""How a bitmap's bits are archived (zlib-compressed) and united again (no database here: the
models' readers import it)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable


def pack_bits(value: bytes) -> bytes:
    """A bitmap's bits as archived: zlib-compressed (level 6: sparse bitmaps shrink many
    times; dense ones cost about their bits)."""
    return zlib.compress(value, 6)


def unpack_bits(data: bytes | memoryview | None) -> bytes:
    """The bits of an archived period (``b""`` when it kept none)."""
    return zlib.decompress(bytes(data)) if data else b""


def union_bits(parts: Iterable[bytes | memoryview | None]) -> bytes:
    """The OR of archived bitmaps (compressed bits), as a bitmap's bytes."""
    longest, value = 0, 0
    for part in parts:
        bits = unpack_bits(part)
        if bits:
            # Bit 0 is the first byte's highest: a longer bitmap pads the shorter on the right.
            value <<= 8 * max(len(bits) - longest, 0)
            longest = max(longest, len(bits))
            value |= int.from_bytes(bits.ljust(longest, b"\0"), "big")
    return value.to_bytes(longest, "big") if longest else b""


def popcount(bits: bytes) -> int:
    """The bits set in ``bits``."""
    return int.from_bytes(bits, "big").bit_count()
