"""What a ``UniqueEstimate`` counts: items normalised to the text Redis hashes.

An item is counted by its text, so the same item always hashes the same, whichever process
adds it: an ``int`` (``IntEnum`` and ``IntegerChoices`` members included, ``bool`` refused) by
its decimal digits, a ``uuid.UUID`` by its canonical form (lowercase, hyphenated), a ``str`` as
it is. So ``5`` and ``"5"`` are one item, and so are a UUID and ``str()`` of it.
"""

from __future__ import annotations

import uuid

from ..core.validation import shown

#: Longest ``str`` item, in bytes of UTF-8: every item travels to Redis (and waits in the
#: sender's buffer when deferred), so its size is bounded; a longer text is refused.
MAX_ITEM_BYTES = 1024
#: Integer items are 64-bit ids, signed or unsigned.
MIN_INT_ITEM = -(2**63)
MAX_INT_ITEM = 2**64 - 1


def normalize_item(item: object) -> str:
    """The text of ``item`` that Redis hashes; ``TypeError``/``ValueError`` saying what is
    wrong for anything else."""
    if isinstance(item, bool):
        raise TypeError(f"An item must be a str, int or UUID, not a bool ({shown(item)}).")
    if isinstance(item, int):
        if not MIN_INT_ITEM <= item <= MAX_INT_ITEM:
            raise ValueError(
                f"An int item must be a 64-bit id, in [-2**63, 2**64 - 1], not {int(item)}; "
                "pass a str to count longer ones."
            )
        return str(int(item))  # an IntEnum member by its value, not its name
    if isinstance(item, uuid.UUID):
        return str(item)
    if isinstance(item, str):
        text = str.__str__(item)  # a str subclass (a StrEnum) by its value
        if not text:
            raise ValueError("An item must not be the empty str.")
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            raise ValueError(f"A str item must be encodable as UTF-8: {exc.reason}.") from None
        if size > MAX_ITEM_BYTES:
            raise ValueError(
                f"A str item must take at most {MAX_ITEM_BYTES} bytes in UTF-8, not {size}; "
                "count a digest of longer ones (e.g. hashlib.blake2b(text).hexdigest())."
            )
        return text
    raise TypeError(
        f"An item must be a str, int or UUID, not {type(item).__name__}: {shown(item)}."
    )
