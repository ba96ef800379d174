"""An event checked and encoded before anything is sent (``record``, ``record_many``)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.timeutil import When, to_timestamp
from ..core.validation import integer, shown
from .codec import encode_value, score, utf8, valid_field

if TYPE_CHECKING:
    from .model import EventSeries

#: One validated event: (score, UTF-8 field/value pairs, (indexed field, text) pairs).
Prepared = tuple[str, list[bytes], list[tuple[str, str]]]

#: Largest cap of distinct values per indexed field (each value is a sorted set of its own).
MAX_DISTINCT_VALUES = 100_000


def validate_max_values(value: object, what: str = "max_values") -> int:
    """A cap of distinct values per indexed field: an int in ``[1, MAX_DISTINCT_VALUES]``."""
    return integer(value, what, minimum=1, maximum=MAX_DISTINCT_VALUES)


class RecordHead(NamedTuple):
    """The parts of a record call that depend on the series and the settings only (built once
    per configuration by ``EventSeries._record_head``)."""

    keys: tuple[str, ...]  # id counter, time index, meta hash, cached window sizes
    args: tuple[str | int, ...]  # the arguments before the prune budget
    tail: tuple[str | int, ...]  # the arguments after it, up to the ids reserved
    fields: dict[str, tuple[str, str, str]]  # per indexed field: index prefix, values, overflow
    catalogue: str


def prepare(series: EventSeries, when: When, fields: Mapping[str, Any]) -> Prepared:
    """Validate one event: (score, flat field/value pairs encoded as UTF-8, (indexed field,
    text) pairs). Everything is encoded here, so sending it can no longer fail."""
    if not fields:
        raise ValueError(f"An event of {series.name!r} needs at least one field.")
    if len(fields) > series.MAX_FIELDS:
        raise ValueError(
            f"An event of {series.name!r} may have at most {series.MAX_FIELDS} fields, "
            f"not {len(fields)}."
        )
    timestamp = to_timestamp(when)
    flat: list[bytes] = []
    entries: list[tuple[str, str]] = []
    for field, value in fields.items():
        valid_field(field)
        stored, text = encode_value(field, value)
        try:
            encoded = stored.encode("utf-8")
        except UnicodeEncodeError:  # the clear error, worded only when it is raised
            encoded = utf8(stored, f"The value of field {shown(field)}")
        indexed = field in series.index
        if indexed and len(encoded) - 2 > series.MAX_INDEXED_VALUE_BYTES:  # the text, untagged
            raise ValueError(
                f"The value of the indexed field {shown(field)} takes {len(encoded) - 2} bytes; "
                f"at most {series.MAX_INDEXED_VALUE_BYTES} are allowed: an indexed value names "
                "a key (EventSeries.MAX_INDEXED_VALUE_BYTES)."
            )
        if len(encoded) > series.MAX_VALUE_BYTES:
            raise ValueError(
                f"The value of field {shown(field)} takes {len(encoded)} bytes; at most "
                f"{series.MAX_VALUE_BYTES} are allowed (EventSeries.MAX_VALUE_BYTES)."
            )
        flat += [field.encode("utf-8"), encoded]
        if indexed:
            entries.append((field, text))
    return score(timestamp), flat, entries


def prepared_chunks(
    series: EventSeries, events: Iterable[Mapping[str, Any]]
) -> list[list[Prepared]]:
    """``record_many``'s events validated and grouped into script calls."""
    chunks: list[list[Prepared]] = []
    chunk: list[Prepared] = []
    weight = 0
    for item in events:
        if not isinstance(item, Mapping):
            raise TypeError(f"record_many expects mappings of fields, not {shown(item)}.")
        fields = dict(item)
        when = fields.pop("when", None)
        event = prepare(series, when, fields)
        size = len(event[1]) // 2
        if chunk and (
            len(chunk) >= series.MAX_EVENTS_PER_CALL or weight + size > series.MAX_FIELDS_PER_CALL
        ):
            chunks.append(chunk)
            chunk, weight = [], 0
        chunk.append(event)
        weight += size
    if chunk:
        chunks.append(chunk)
    return chunks
